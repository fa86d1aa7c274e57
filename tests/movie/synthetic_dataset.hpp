#pragma once
// A host dataset without metadata (no calibration), counts from a formula.
#include "resident/dataset.hpp"

namespace qgpu::test {

inline Dataset bare_dataset() {
  HostArray4D h;
  h.shape = {4, 4, 8, 8};
  h.dtype = DType::u16;
  h.bytes.resize(h.shape.elements() * 2);
  for (std::size_t i = 0; i < h.shape.elements(); ++i) h.as<std::uint16_t>()[i] = std::uint16_t(i % 97);
  Provenance p;
  p.operation = "test.bare";
  p.backend = "cpu";
  return Dataset::from_host(std::move(h), nlohmann::json::object(), p);
}

}  // namespace qgpu::test
