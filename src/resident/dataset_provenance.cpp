#include "resident/dataset_provenance.hpp"

#include <utility>

namespace qgpu {

Provenance dataset_provenance(const Dataset& ds, std::string operation, std::string output_dtype,
                              std::vector<std::size_t> output_shape, nlohmann::json parameters) {
  Provenance p;
  p.operation = std::move(operation);
  p.backend = backend_name(ds.backend());
  p.input_dtype = dtype_name(ds.dtype());
  p.input_shape = ds.shape().dims();
  p.output_dtype = std::move(output_dtype);
  p.output_shape = std::move(output_shape);
  set_representation(p, ds);
  p.parameters = std::move(parameters);
  return p;
}

}  // namespace qgpu
