// CUDA backend against the CPU reference: render and histogram bit for bit, FFT within a tolerance.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "display/display.hpp"
#include "support/cuda_required.hpp"
#include "test_images.hpp"

namespace qgpu::display {
namespace {

using test::make_image;

struct Case {
  Scale scale;
  double lower, upper;
  const char* colormap;
};

const Case kCases[] = {
    {Scale::linear, 0, 100, "viridis"}, {Scale::linear, 1, 99, "gray"},       {Scale::log, 1, 99, "inferno"},
    {Scale::log, 0, 100, "gray"},       {Scale::signed_log, 1, 99, "magma"}, {Scale::signed_log, 0.5, 99.9, "gray"},
    {Scale::signed_log, 50, 50, "gray"},
};

DisplayOptions options_of(const Case& c) {
  DisplayOptions o;
  o.scale = c.scale;
  o.lower_percentile = c.lower;
  o.upper_percentile = c.upper;
  o.colormap = c.colormap;
  return o;
}

// Reports the first differing pixel instead of a 1 MB vector dump.
void expect_same_rgba(const Rgba& cpu, const Rgba& gpu, const std::string& what) {
  ASSERT_EQ(cpu.rgba.size(), gpu.rgba.size()) << what;
  std::size_t differing = 0, first = cpu.rgba.size();
  for (std::size_t i = 0; i < cpu.rgba.size(); ++i)
    if (cpu.rgba[i] != gpu.rgba[i] && differing++ == 0) first = i;
  EXPECT_EQ(differing, 0u) << what << ": first difference at byte " << first;
  EXPECT_EQ(cpu.provenance.parameters["lo"], gpu.provenance.parameters["lo"]) << what;
  EXPECT_EQ(cpu.provenance.parameters["hi"], gpu.provenance.parameters["hi"]) << what;
}

void expect_same_everything(const Image<float>& img, const DisplayOptions& o, const std::string& what) {
  const Rgba rc = render(img, o), rg = render(on_backend(img, Backend::cuda), o);
  expect_same_rgba(rc, rg, what);
  EXPECT_EQ(rg.provenance.backend, "cuda");
  const Histogram hc = histogram(img, o), hg = histogram(on_backend(img, Backend::cuda), o);
  EXPECT_EQ(hc.counts, hg.counts) << what;
  EXPECT_EQ(hc.lo, hg.lo) << what;
  EXPECT_EQ(hc.hi, hg.hi) << what;
  EXPECT_EQ(hg.provenance.backend, "cuda");
}

TEST(DisplayCuda, RenderAndHistogramMatchCpuExactly) {
  QGPU_REQUIRE_CUDA();
  const Image<float> img = test::wide_range_image(512, 512, 2024);
  for (const Case& c : kCases)
    expect_same_everything(img, options_of(c),
                           scale_name(c.scale) + " " + std::to_string(c.lower) + ".." + std::to_string(c.upper));
}

TEST(DisplayCuda, OddShapesAndManyGridStrides) {
  QGPU_REQUIRE_CUDA();
  // 2048 x 2048 needs 4 grid-stride rounds at the 4096-block cap; odd shapes exercise partial blocks.
  for (auto [rows, cols] : {std::pair<std::size_t, std::size_t>{1, 1}, {37, 53}, {1, 1000}, {2048, 2048}}) {
    const Image<float> img = test::wide_range_image(rows, cols, static_cast<unsigned>(rows * 7 + cols));
    expect_same_everything(img, options_of({Scale::signed_log, 1, 99, "viridis"}),
                           std::to_string(rows) + "x" + std::to_string(cols));
  }
}

TEST(DisplayCuda, ExplicitRangeAndDegenerateImages) {
  QGPU_REQUIRE_CUDA();
  DisplayOptions o;
  o.scale = Scale::log;
  o.vmin = 2.0;
  o.vmax = 15.0;
  expect_same_everything(test::wide_range_image(300, 200, 5), o, "vmin/vmax");
  const float nan = std::numeric_limits<float>::quiet_NaN();
  expect_same_everything(make_image(16, 16, std::vector<float>(256, nan)), DisplayOptions{}, "all NaN");
  expect_same_everything(make_image(16, 16, std::vector<float>(256, 4.0f)), DisplayOptions{}, "constant");
  const Histogram h = histogram(on_backend(make_image(2, 5, {0, 1, 2, 3, 4, nan, 0, 4, 4, 2}), Backend::cuda), DisplayOptions{});
  EXPECT_EQ(h.counts[0], 2u);
  EXPECT_EQ(h.counts[64], 1u);
  EXPECT_EQ(h.counts[128], 2u);
  EXPECT_EQ(h.counts[191], 1u);
  EXPECT_EQ(h.counts[255], 3u);
  EXPECT_EQ(std::accumulate(h.counts.begin(), h.counts.end(), std::uint64_t{0}), 9u);
}

TEST(DisplayCuda, InvalidOptionsRaiseBeforeTouchingTheGpu) {
  QGPU_REQUIRE_CUDA();
  DisplayOptions o;
  o.colormap = "jet";
  EXPECT_THROW(render(on_backend(make_image(1, 2, {1, 2}), Backend::cuda), o), InvalidArgument);
  DisplayOptions high;
  high.vmin = 100.0;  // above the data's maximum
  EXPECT_THROW(histogram(on_backend(make_image(1, 2, {1, 2}), Backend::cuda), high), InvalidArgument);
}

// Stated tolerance of fft_log_magnitude between backends: |cpu - cuda| <= 1e-4 * max(cpu) per pixel.
TEST(DisplayCuda, FftMatchesCpuWithinTolerance) {
  QGPU_REQUIRE_CUDA();
  using Shape = std::pair<std::size_t, std::size_t>;
  for (auto [rows, cols] : {Shape{512, 512}, {129, 67}, {1, 64}, {64, 1}, {1, 1}, {2, 3}}) {
    const Image<float> img = test::uniform_image(rows, cols, static_cast<unsigned>(rows + 31 * cols));
    const Image<float> fc = fft_log_magnitude(img), fg = fft_log_magnitude(on_backend(img, Backend::cuda));
    ASSERT_EQ(fg.rows, rows);
    ASSERT_EQ(fg.cols, cols);
    ASSERT_EQ(fg.data.size(), fc.data.size());
    EXPECT_EQ(fg.provenance.backend, "cuda");
    const float peak = *std::max_element(fc.data.begin(), fc.data.end());
    double worst = 0;
    for (std::size_t i = 0; i < fc.data.size(); ++i)
      worst = std::max(worst, static_cast<double>(std::fabs(fc.data[i] - fg.data[i])));
    EXPECT_LE(worst, 1e-4 * peak) << rows << "x" << cols;
    // The zero frequency (sum of the pixels) sits at (rows/2, cols/2) on both.
    const double sum = std::accumulate(img.data.begin(), img.data.end(), 0.0);
    EXPECT_NEAR(fg.at(rows / 2, cols / 2), std::log1p(sum), 1e-4 * std::log1p(sum)) << rows << "x" << cols;
  }
}

}  // namespace
}  // namespace qgpu::display
