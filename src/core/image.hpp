#pragma once
// A 2D result on the host, row-major (row, col), with its provenance.
#include <cstddef>
#include <vector>

#include "core/provenance.hpp"

namespace qgpu {

template <class T> struct Image {
  std::size_t rows = 0;
  std::size_t cols = 0;
  std::vector<T> data;  // rows * cols, row-major
  Provenance provenance;

  T& at(std::size_t r, std::size_t c) { return data[r * cols + c]; }
  const T& at(std::size_t r, std::size_t c) const { return data[r * cols + c]; }
};

}  // namespace qgpu
