#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numbers>

#include "display/display.hpp"
#include "test_images.hpp"

namespace qgpu::display {
namespace {

using test::make_image;

// Expects peaks of log(1 + peak) at the given (row, col) positions and ~0 elsewhere.
void expect_peaks(const Image<float>& f, const std::vector<std::pair<std::size_t, std::size_t>>& at, double peak) {
  for (std::size_t r = 0; r < f.rows; ++r)
    for (std::size_t c = 0; c < f.cols; ++c) {
      const bool is_peak = std::find(at.begin(), at.end(), std::make_pair(r, c)) != at.end();
      if (is_peak) EXPECT_NEAR(f.at(r, c), std::log1p(peak), 1e-5) << r << "," << c;
      else EXPECT_NEAR(f.at(r, c), 0.0, 1e-4) << r << "," << c;
    }
}

TEST(DisplayFftCpu, DeltaIsFlat) {
  std::vector<float> d(6 * 8, 0.0f);
  d[0] = 1.0f;
  const Image<float> f = fft_log_magnitude(make_image(6, 8, d));
  ASSERT_EQ(f.rows, 6u);
  ASSERT_EQ(f.cols, 8u);
  for (float v : f.data) EXPECT_NEAR(v, std::log(2.0), 1e-6);
}

TEST(DisplayFftCpu, ConstantPeaksAtCentre) {
  const Image<float> f = fft_log_magnitude(make_image(4, 6, std::vector<float>(24, 0.5f)));
  expect_peaks(f, {{2, 3}}, 0.5 * 24);
}

TEST(DisplayFftCpu, CosineAlongColumnsEvenSize) {
  // cos(2 pi 3 c / 16): two peaks of rows * cols / 2 = 64 at column frequencies +-3, shifted to cols/2 +- 3.
  const std::size_t rows = 8, cols = 16;
  std::vector<float> d(rows * cols);
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c = 0; c < cols; ++c)
      d[r * cols + c] = static_cast<float>(std::cos(2 * std::numbers::pi * 3 * c / cols));
  expect_peaks(fft_log_magnitude(make_image(rows, cols, d)), {{4, 5}, {4, 11}}, 64.0);
}

TEST(DisplayFftCpu, CosineAlongRowsOddSize) {
  // cos(2 pi 2 r / 5) on 5 x 7: peaks of 35 / 2 at row frequencies +-2; zero frequency at (5/2, 7/2) = (2, 3).
  const std::size_t rows = 5, cols = 7;
  std::vector<float> d(rows * cols);
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c = 0; c < cols; ++c)
      d[r * cols + c] = static_cast<float>(std::cos(2 * std::numbers::pi * 2 * r / rows));
  expect_peaks(fft_log_magnitude(make_image(rows, cols, d)), {{0, 3}, {4, 3}}, 17.5);
}

TEST(DisplayFftCpu, Provenance) {
  const Image<float> f = fft_log_magnitude(make_image(2, 3, {1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(f.provenance.operation, "display.fft_log_magnitude");
  EXPECT_EQ(f.provenance.backend, "cpu");
  EXPECT_EQ(f.provenance.output_dtype, "float32");
  EXPECT_EQ(f.provenance.output_shape, (std::vector<std::size_t>{2, 3}));
  EXPECT_EQ(f.provenance.parameters["zero_frequency"], (nlohmann::json{1, 1}));
  EXPECT_NEAR(f.at(1, 1), std::log1p(21.0), 1e-5);  // DC = sum of the pixels
}

}  // namespace
}  // namespace qgpu::display
