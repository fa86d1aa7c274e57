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
  std::string representation;   // of the input dataset: "dense" | "encoded"
  std::size_t resident_bytes = 0;  // bytes the input dataset holds resident (0: not made from a dataset)
  std::size_t dense_bytes = 0;     // its size dense
  nlohmann::json parameters = nlohmann::json::object();
  std::string version = kVersion;

  // A product of another product: the same input dataset's representation and sizes ("dense" for plain arrays).
  void copy_representation(const Provenance& from) {
    representation = from.representation.empty() ? "dense" : from.representation;
    resident_bytes = from.resident_bytes;
    dense_bytes = from.dense_bytes;
  }

  nlohmann::json to_json() const {
    nlohmann::json j = {{"operation", operation},       {"backend", backend},
                        {"input_dtype", input_dtype},   {"input_shape", input_shape},
                        {"output_dtype", output_dtype}, {"output_shape", output_shape},
                        {"representation", representation}, {"parameters", parameters},
                        {"version", version}};
    if (dense_bytes) {
      j["resident_bytes"] = resident_bytes;
      j["dense_bytes"] = dense_bytes;
    }
    return j;
  }
};

}  // namespace qgpu
