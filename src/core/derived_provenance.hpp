#pragma once
// Provenance builders, one for each kind of input (every result's provenance is made by one of these):
// - derived_provenance (here): a product of other products (centred DPC from CoM, rotation, iDPC from a field);
// - dataset_provenance (resident/dataset_provenance.hpp): a result computed from a Dataset (virtual detectors, CoM,
//   SSB, parallax); it lives with Dataset because core does not know datasets.
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/provenance.hpp"

namespace qgpu {

// `operation` on `backend` over maps of `input_shape` whose provenance is `from` (representation and sizes of the
// dataset they came from are kept, "dense" for plain arrays); dtype of input and output, parameters as given.
inline Provenance derived_provenance(std::string operation, std::string backend, const Provenance& from,
                                     std::vector<std::size_t> input_shape, std::vector<std::size_t> output_shape,
                                     nlohmann::json parameters = nlohmann::json::object(),
                                     const std::string& dtype = "float32") {
  Provenance p;
  p.operation = std::move(operation);
  p.backend = std::move(backend);
  p.input_dtype = dtype;
  p.input_shape = std::move(input_shape);
  p.output_dtype = dtype;
  p.output_shape = std::move(output_shape);
  p.copy_representation(from);
  p.parameters = std::move(parameters);
  return p;
}

}  // namespace qgpu
