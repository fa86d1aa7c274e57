#pragma once
// Provenance carried by every result: which operation made it, on which backend, from what input,
// with which parameters, by which library version.
#include <cstddef>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/version.hpp"

namespace qgpu {

struct Provenance {
  std::string operation;
  std::string backend;
  std::string input_dtype;
  std::vector<std::size_t> input_shape;
  std::string output_dtype;
  std::vector<std::size_t> output_shape;
  std::string representation;
  nlohmann::json parameters = nlohmann::json::object();
  std::string version = kVersion;

  nlohmann::json to_json() const {
    return {{"operation", operation},       {"backend", backend},
            {"input_dtype", input_dtype},   {"input_shape", input_shape},
            {"output_dtype", output_dtype}, {"output_shape", output_shape},
            {"representation", representation}, {"parameters", parameters},
            {"version", version}};
  }
};

}  // namespace qgpu
