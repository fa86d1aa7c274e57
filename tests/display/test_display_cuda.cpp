// GPU backends (cuda, vulkan) against the CPU reference: render and histogram bit for bit; FFT (cuda) within a
// tolerance.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <numeric>

#include "display/display.hpp"
#include "core/error.hpp"
#include "support/cuda_required.hpp"
#include "support/gpu_backends.hpp"
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

class DisplayGpu : public ::testing::TestWithParam<Backend> {};

void expect_same_everything(Backend backend, const Image<float>& img, const DisplayOptions& o, const std::string& what) {
  const Rgba rc = render(img, o), rg = render(on_backend(img, backend), o);
  expect_same_rgba(rc, rg, what);
  EXPECT_EQ(rg.provenance.backend, backend_name(backend));
  // the colormap indices (the service's PNG path): the map's colour at each is the render's (cuda: the CPU's indices
  // themselves; vulkan looks each rendered colour up, the lowest index of a colour the map repeats)
  const Indexed ic = render_indexed(img, o), ig = render_indexed(on_backend(img, backend), o);
  if (backend == Backend::cuda) EXPECT_TRUE(ic.index == ig.index) << what;
  EXPECT_EQ(ic.transparent, ig.transparent) << what;
  const Lut& lut = colormap(o.colormap);
  std::size_t transparent = 0, wrong = 0;
  for (std::size_t i = 0; i < ig.index.size(); ++i) {
    const bool clear = rg.rgba[4 * i + 3] == 0;
    transparent += clear;
    if (!clear && !std::equal(lut.begin() + 4 * ig.index[i], lut.begin() + 4 * ig.index[i] + 4, rg.rgba.begin() + 4 * i))
      ++wrong;
  }
  EXPECT_EQ(ig.transparent, transparent) << what;
  EXPECT_EQ(wrong, 0u) << what;
  const Histogram hc = histogram(img, o), hg = histogram(on_backend(img, backend), o);
  EXPECT_EQ(hc.counts, hg.counts) << what;
  EXPECT_EQ(hc.lo, hg.lo) << what;
  EXPECT_EQ(hc.hi, hg.hi) << what;
  EXPECT_EQ(hg.provenance.backend, backend_name(backend));
}

TEST_P(DisplayGpu, RenderAndHistogramMatchCpuExactly) {
  QGPU_REQUIRE_BACKEND(GetParam());
  const Image<float> img = test::wide_range_image(512, 512, 2024);
  for (const Case& c : kCases)
    expect_same_everything(GetParam(), img, options_of(c),
                           scale_name(c.scale) + " " + std::to_string(c.lower) + ".." + std::to_string(c.upper));
}

TEST_P(DisplayGpu, OddShapesAndManyGridStrides) {
  QGPU_REQUIRE_BACKEND(GetParam());
  // 2048 x 2048 needs 4 grid-stride rounds at the 4096-block cap; odd shapes exercise partial blocks.
  for (auto [rows, cols] : {std::pair<std::size_t, std::size_t>{1, 1}, {37, 53}, {1, 1000}, {2048, 2048}}) {
    const Image<float> img = test::wide_range_image(rows, cols, static_cast<unsigned>(rows * 7 + cols));
    expect_same_everything(GetParam(), img, options_of({Scale::signed_log, 1, 99, "viridis"}),
                           std::to_string(rows) + "x" + std::to_string(cols));
  }
}

TEST_P(DisplayGpu, ExplicitRangeAndDegenerateImages) {
  QGPU_REQUIRE_BACKEND(GetParam());
  DisplayOptions o;
  o.scale = Scale::log;
  o.vmin = 2.0;
  o.vmax = 15.0;
  expect_same_everything(GetParam(), test::wide_range_image(300, 200, 5), o, "vmin/vmax");
  const float nan = std::numeric_limits<float>::quiet_NaN();
  expect_same_everything(GetParam(), make_image(16, 16, std::vector<float>(256, nan)), DisplayOptions{}, "all NaN");
  expect_same_everything(GetParam(), make_image(16, 16, std::vector<float>(256, 4.0f)), DisplayOptions{}, "constant");
  const Histogram h = histogram(on_backend(make_image(2, 5, {0, 1, 2, 3, 4, nan, 0, 4, 4, 2}), GetParam()), DisplayOptions{});
  EXPECT_EQ(h.counts[0], 2u);
  EXPECT_EQ(h.counts[64], 1u);
  EXPECT_EQ(h.counts[128], 2u);
  EXPECT_EQ(h.counts[191], 1u);
  EXPECT_EQ(h.counts[255], 3u);
  EXPECT_EQ(std::accumulate(h.counts.begin(), h.counts.end(), std::uint64_t{0}), 9u);
}

TEST_P(DisplayGpu, InvalidOptionsRaiseBeforeTouchingTheGpu) {
  QGPU_REQUIRE_BACKEND(GetParam());
  DisplayOptions o;
  o.colormap = "jet";
  EXPECT_THROW(render(on_backend(make_image(1, 2, {1, 2}), GetParam()), o), InvalidArgument);
  DisplayOptions high;
  high.vmin = 100.0;  // above the data's maximum
  EXPECT_THROW(histogram(on_backend(make_image(1, 2, {1, 2}), GetParam()), high), InvalidArgument);
}

// Counts (a virtual image, the service's PNG of BF/ADF): the indices of render_indexed(as_float(counts)) on the CPU,
// including counts a float cannot hold (rounded to the nearest, ties to even: 2^24 + 1, 2^53 + 1, near 2^64).
TEST_P(DisplayGpu, CountsRenderAsTheirFloatValues) {
  QGPU_REQUIRE_BACKEND(GetParam());
  Image<std::uint64_t> counts;
  counts.rows = 96;
  counts.cols = 80;
  std::uint64_t x = 88172645463325252ull;
  const std::uint64_t special[] = {0, 1, (1ull << 24) + 1, (1ull << 24) + 3, (1ull << 53) + 1, ~0ull, ~0ull - (1ull << 39)};
  for (std::size_t i = 0; i < counts.rows * counts.cols; ++i) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    counts.data.push_back(i < std::size(special) ? special[i] : i % 3 ? x % 70000 : x >> (x % 64));
  }
  for (const Case& c : kCases) {
    const DisplayOptions o = options_of(c);
    const Indexed ref = render_indexed(as_float(counts), o), got = render_indexed(on_backend(counts, GetParam()), o);
    const std::string what = scale_name(c.scale) + " " + std::to_string(c.lower) + ".." + std::to_string(c.upper);
    EXPECT_EQ(got.transparent, 0u) << what;
    if (GetParam() == Backend::cuda) {
      EXPECT_TRUE(ref.index == got.index) << what;
      EXPECT_EQ(got.provenance.input_dtype, "uint64");
    } else {
      EXPECT_TRUE(render_indexed(on_backend(as_float(counts), GetParam()), o).index == got.index) << what;
    }
    EXPECT_EQ(ref.provenance.parameters["lo"], got.provenance.parameters["lo"]) << what;
    EXPECT_EQ(ref.provenance.parameters["hi"], got.provenance.parameters["hi"]) << what;
    EXPECT_EQ(got.provenance.backend, backend_name(GetParam()));
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, DisplayGpu, QGPU_GPU_BACKENDS);

// Stated tolerance of fft_log_magnitude between backends: |cpu - gpu| <= 1e-4 * max(cpu) per pixel.
TEST_P(DisplayGpu, FftMatchesCpuWithinTolerance) {
  QGPU_REQUIRE_BACKEND(GetParam());
  using Shape = std::pair<std::size_t, std::size_t>;
  // 129 = 3 x 43, 37 x 41, 97 x 101, 1 x 17: prime factors above 13 (VkFFT's Bluestein path on vulkan)
  for (auto [rows, cols] : {Shape{512, 512}, {129, 67}, {1, 64}, {64, 1}, {1, 1}, {2, 3}, {45, 91}, {37, 41},
                            {97, 101}, {1, 17}}) {
    const Image<float> img = test::uniform_image(rows, cols, static_cast<unsigned>(rows + 31 * cols));
    const Image<float> fc = fft_log_magnitude(img), fg = fft_log_magnitude(on_backend(img, GetParam()));
    ASSERT_EQ(fg.rows, rows);
    ASSERT_EQ(fg.cols, cols);
    ASSERT_EQ(fg.data.size(), fc.data.size());
    EXPECT_EQ(fg.provenance.backend, backend_name(GetParam()));
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
