#pragma once
// The provenance builder for a result computed from a Dataset (see core/derived_provenance.hpp for the other kind).
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/provenance.hpp"
#include "resident/dataset.hpp"

namespace qgpu {

// `operation` on the dataset's backend: input dtype / shape / representation / resident and dense bytes of `ds`,
// the output's dtype name ("uint64", "float32", ...) and shape, parameters as given.
Provenance dataset_provenance(const Dataset& ds, std::string operation, std::string output_dtype,
                              std::vector<std::size_t> output_shape,
                              nlohmann::json parameters = nlohmann::json::object());

}  // namespace qgpu
