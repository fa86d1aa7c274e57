#pragma once
// Small helpers building test images for the display tests.
#include <cmath>
#include <cstddef>
#include <limits>
#include <random>
#include <vector>

#include "core/image.hpp"

namespace qgpu::display::test {

inline Image<float> make_image(std::size_t rows, std::size_t cols, std::vector<float> data) {
  Image<float> img;
  img.rows = rows;
  img.cols = cols;
  img.data = std::move(data);
  return img;
}

// Values spanning many decades of both signs, plus NaN, +-inf, +-0 and subnormals: stresses scaling,
// percentile selection and the bit-exactness between backends.
inline Image<float> wide_range_image(std::size_t rows, std::size_t cols, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> decade(-8.0, 12.0), u(0.0, 1.0);
  std::vector<float> d(rows * cols);
  for (float& v : d) {
    const double k = u(rng);
    if (k < 0.05) v = std::numeric_limits<float>::quiet_NaN();
    else if (k < 0.06) v = std::numeric_limits<float>::infinity();
    else if (k < 0.07) v = -std::numeric_limits<float>::infinity();
    else if (k < 0.08) v = (k < 0.075) ? 0.0f : -0.0f;
    else if (k < 0.085) v = 1e-40f;  // subnormal
    else {
      const float mag = static_cast<float>(std::pow(10.0, decade(rng)));
      v = u(rng) < 0.3 ? -mag : mag;
    }
  }
  return make_image(rows, cols, std::move(d));
}

// Uniform values in [0, 1): for FFT comparisons (no NaN, which would spread through the transform).
inline Image<float> uniform_image(std::size_t rows, std::size_t cols, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  std::vector<float> d(rows * cols);
  for (float& v : d) v = u(rng);
  return make_image(rows, cols, std::move(d));
}

}  // namespace qgpu::display::test
