#pragma once
// Small in-memory datasets with counts given by a formula, for exact expectations.
#include <cstdint>
#include <random>

#include "resident/dataset.hpp"

namespace qgpu::test {

template <class T> Dataset synthetic(Shape4D s, std::uint32_t max_count, std::uint64_t seed = 7) {
  HostArray4D h;
  h.shape = s;
  h.dtype = dtype_of<T>::value;
  h.bytes.resize(s.elements() * sizeof(T));
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<std::uint32_t> dist(0, max_count);
  for (std::size_t i = 0; i < s.elements(); ++i) h.as<T>()[i] = T(dist(rng));
  Provenance p;
  p.operation = "test.synthetic";
  p.backend = "cpu";
  return Dataset::from_host(std::move(h), nlohmann::json::object(), p);
}

}  // namespace qgpu::test
