#pragma once
// Small in-memory datasets with counts given by a formula, for exact expectations.
#include <cmath>
#include <cstdint>
#include <random>
#include <type_traits>

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

// Signed or float values in [lo, hi] (floats: any real value, with a fractional part), for the dtypes beyond counts.
template <class T> Dataset synthetic_values(Shape4D s, double lo, double hi, std::uint64_t seed = 7) {
  HostArray4D h;
  h.shape = s;
  h.dtype = dtype_of<T>::value;
  h.bytes.resize(s.elements() * sizeof(T));
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  for (std::size_t i = 0; i < s.elements(); ++i) {
    const double v = dist(rng);
    h.as<T>()[i] = std::is_floating_point_v<T> ? T(v) : T(std::llround(v));
  }
  Provenance p;
  p.operation = "test.synthetic_values";
  p.backend = "cpu";
  return Dataset::from_host(std::move(h), nlohmann::json::object(), p);
}

// Every frame a disk of `radius` around (center_row, center_col) with Poisson counts of mean `level` (and a dim
// background of level / 20), uint16: for the BF disk fit.
inline Dataset disk_frames(Shape4D s, double center_row, double center_col, double radius, double level,
                           std::uint64_t seed = 7) {
  HostArray4D h;
  h.shape = s;
  h.dtype = DType::u16;
  h.bytes.resize(s.elements() * 2);
  std::mt19937_64 rng(seed);
  std::poisson_distribution<int> in(level), out(level / 20);
  const std::size_t frame = s.det_rows * s.det_cols;
  for (std::size_t i = 0; i < s.elements(); ++i) {
    const std::size_t k = i % frame, r = k / s.det_cols, c = k % s.det_cols;
    const double dr = double(r) - center_row, dc = double(c) - center_col;
    h.as<std::uint16_t>()[i] = std::uint16_t(dr * dr + dc * dc <= radius * radius ? in(rng) : out(rng));
  }
  Provenance p;
  p.operation = "test.disk_frames";
  p.backend = "cpu";
  return Dataset::from_host(std::move(h), nlohmann::json::object(), p);
}

}  // namespace qgpu::test
