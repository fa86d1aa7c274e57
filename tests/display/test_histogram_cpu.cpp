#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <numeric>

#include "display/display.hpp"
#include "test_images.hpp"

namespace qgpu::display {
namespace {

using test::make_image;
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

TEST(DisplayHistogramCpu, HandCount) {
  const Image<float> img = make_image(2, 5, {0, 1, 2, 3, 4, kNaN, kInf, -kInf, 4, 0});
  const Histogram h = histogram(img, DisplayOptions{});
  EXPECT_EQ(h.lo, 0.0);
  EXPECT_EQ(h.hi, 4.0);
  std::array<std::uint64_t, 256> want{};
  want[0] = 2;    // 0, 0
  want[64] = 1;   // 1
  want[128] = 1;  // 2
  want[191] = 1;  // 3
  want[255] = 2;  // 4, 4
  EXPECT_EQ(h.counts, want);
}

TEST(DisplayHistogramCpu, ClippedValuesLandInEndBins) {
  DisplayOptions o;
  o.vmin = 10.0;
  o.vmax = 20.0;
  const Histogram h = histogram(make_image(1, 6, {-100, 5, 10, 15, 20, 1e30f}), o);
  EXPECT_EQ(h.counts[0], 3u);    // -100, 5, 10
  EXPECT_EQ(h.counts[128], 1u);  // 15: 127.5 + 0.5
  EXPECT_EQ(h.counts[255], 2u);  // 20, 1e30
}

TEST(DisplayHistogramCpu, SumsToFiniteCountAndMatchesRenderIndices) {
  const Image<float> img = test::wide_range_image(64, 48, 3);
  std::size_t finite = 0;
  for (float v : img.data) finite += std::isfinite(v) ? 1 : 0;
  for (Scale s : {Scale::linear, Scale::log, Scale::signed_log}) {
    DisplayOptions o;
    o.colormap = "gray";
    o.scale = s;
    o.lower_percentile = 2;
    o.upper_percentile = 97;
    const Histogram h = histogram(img, o);
    EXPECT_EQ(std::accumulate(h.counts.begin(), h.counts.end(), std::uint64_t{0}), finite);
    // The histogram counts colour indices: recount them from a gray render.
    const Rgba out = render(img, o);
    std::array<std::uint64_t, 256> from_render{};
    for (std::size_t i = 0; i < img.data.size(); ++i)
      if (out.rgba[4 * i + 3]) ++from_render[out.rgba[4 * i]];
    EXPECT_EQ(h.counts, from_render) << scale_name(s);
    EXPECT_EQ(h.lo, out.provenance.parameters["lo"].get<double>());
    EXPECT_EQ(h.hi, out.provenance.parameters["hi"].get<double>());
    EXPECT_LT(h.lo, h.hi);
    EXPECT_GT(h.counts[0], 0u);
    EXPECT_GT(h.counts[255], 0u);
  }
}

TEST(DisplayHistogramCpu, AllNaNCountsNothing) {
  const Histogram h = histogram(make_image(3, 3, std::vector<float>(9, kNaN)), DisplayOptions{});
  EXPECT_EQ(std::accumulate(h.counts.begin(), h.counts.end(), std::uint64_t{0}), 0u);
  EXPECT_EQ(h.lo, 0.0);
  EXPECT_EQ(h.hi, 0.0);
}

TEST(DisplayHistogramCpu, Provenance) {
  DisplayOptions o;
  o.scale = Scale::log;
  const Histogram h = histogram(make_image(1, 3, {0, 1, 2}), o);
  EXPECT_EQ(h.provenance.operation, "display.histogram");
  EXPECT_EQ(h.provenance.backend, "cpu");
  EXPECT_EQ(h.provenance.input_dtype, "float32");
  EXPECT_EQ(h.provenance.output_shape, (std::vector<std::size_t>{256}));
  EXPECT_EQ(h.provenance.parameters["scale"], "log");
  EXPECT_EQ(h.provenance.parameters["hi"].get<double>(), h.hi);
}

}  // namespace
}  // namespace qgpu::display
