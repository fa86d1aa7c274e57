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

// The same image with float values and the same provenance (what display renders; the CLI, the service and the
// movie writer all show images this way).
template <class T> Image<float> as_float(const Image<T>& img) {
  Image<float> f;
  f.rows = img.rows;
  f.cols = img.cols;
  f.data.assign(img.data.begin(), img.data.end());
  f.provenance = img.provenance;  // rendered where the result lives
  return f;
}

}  // namespace qgpu
