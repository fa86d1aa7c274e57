#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>

#include "core/error.hpp"
#include "display/display.hpp"
#include "test_images.hpp"

namespace qgpu::display {
namespace {

using test::make_image;
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

DisplayOptions gray_options(Scale s = Scale::linear) {
  DisplayOptions o;
  o.colormap = "gray";
  o.scale = s;
  return o;
}

// Colour index of each pixel of a gray render, -1 for transparent ones.
std::vector<int> gray_indices(const Rgba& out) {
  std::vector<int> idx;
  for (std::size_t i = 0; i < out.rows * out.cols; ++i) {
    const std::uint8_t* p = &out.rgba[4 * i];
    if (p[3] == 0) {
      EXPECT_EQ(p[0] + p[1] + p[2], 0) << "transparent pixels are black";
      idx.push_back(-1);
    } else {
      EXPECT_EQ(p[3], 255);
      EXPECT_TRUE(p[0] == p[1] && p[1] == p[2]);
      idx.push_back(p[0]);
    }
  }
  return idx;
}

TEST(DisplayRenderCpu, RampMapsToEveryIndex) {
  std::vector<float> ramp(256);
  std::iota(ramp.begin(), ramp.end(), 0.0f);
  const Rgba out = render(make_image(1, 256, ramp), gray_options());
  ASSERT_EQ(out.rows, 1u);
  ASSERT_EQ(out.cols, 256u);
  ASSERT_EQ(out.rgba.size(), 256u * 4);
  const std::vector<int> idx = gray_indices(out);
  for (int i = 0; i < 256; ++i) EXPECT_EQ(idx[i], i);
}

TEST(DisplayRenderCpu, ViridisColoursAndNonFiniteTransparent) {
  const Rgba out = render(make_image(2, 4, {0, 1, 2, 3, 4, kNaN, kInf, -kInf}), DisplayOptions{});
  const Lut& v = colormap("viridis");
  const int want[] = {0, 64, 128, 191, 255};
  for (int i = 0; i < 5; ++i)
    for (int c = 0; c < 4; ++c) EXPECT_EQ(out.rgba[4 * i + c], v[4 * want[i] + c]) << i << " " << c;
  for (int i = 5; i < 8; ++i)
    for (int c = 0; c < 4; ++c) EXPECT_EQ(out.rgba[4 * i + c], 0) << i;
}

TEST(DisplayRenderCpu, LogScale) {
  const float e = static_cast<float>(std::exp(1.0));
  // log(1 + v) = 0, 1, 3, 4 -> indices 0, 64 (63.75+0.5), 191 (191.25+0.5), 255; negatives scale to 0.
  const std::vector<float> v = {0.0f, e - 1, e * e * e - 1, static_cast<float>(std::exp(4.0) - 1), -5.0f};
  const Rgba out = render(make_image(1, 5, v), gray_options(Scale::log));
  EXPECT_EQ(gray_indices(out), (std::vector<int>{0, 64, 191, 255, 0}));
  EXPECT_NEAR(out.provenance.parameters["hi"].get<double>(), 4.0, 1e-6);
  EXPECT_EQ(out.provenance.parameters["lo"].get<double>(), 0.0);
}

TEST(DisplayRenderCpu, SignedLogScale) {
  const float a = static_cast<float>(std::exp(1.0) - 1), b = static_cast<float>(std::exp(2.0) - 1);
  // sign(v) log(1 + |v|) = -2, -1, 0, 1, 2 over [-2, 2]
  const Rgba out = render(make_image(1, 5, {-b, -a, 0.0f, a, b}), gray_options(Scale::signed_log));
  EXPECT_EQ(gray_indices(out), (std::vector<int>{0, 64, 128, 191, 255}));
}

TEST(DisplayRenderCpu, PercentileClipping) {
  std::vector<float> v(101);
  std::iota(v.begin(), v.end(), 0.0f);
  std::shuffle(v.begin(), v.end(), std::mt19937(7));
  DisplayOptions o = gray_options();
  o.lower_percentile = 10;
  o.upper_percentile = 90;
  const Rgba out = render(make_image(1, 101, v), o);
  EXPECT_EQ(out.provenance.parameters["lo"].get<double>(), 10.0);
  EXPECT_EQ(out.provenance.parameters["hi"].get<double>(), 90.0);
  const std::vector<int> idx = gray_indices(out);
  for (std::size_t i = 0; i < v.size(); ++i) {
    const int want = v[i] <= 10 ? 0 : v[i] >= 90 ? 255 : static_cast<int>(std::floor((v[i] - 10) / 80.0 * 255 + 0.5));
    EXPECT_EQ(idx[i], want) << v[i];
  }
  EXPECT_EQ(idx[std::find(v.begin(), v.end(), 30.0f) - v.begin()], 64);   // 63.75 + 0.5
  EXPECT_EQ(idx[std::find(v.begin(), v.end(), 50.0f) - v.begin()], 128);  // 127.5 + 0.5
}

TEST(DisplayRenderCpu, PercentilesIgnoreNonFinite) {
  // Finite values 5, 1, 4, 2, 3: the 30th percentile is sorted[round(0.3 * 4)] = sorted[1] = 2,
  // the 37.5th is sorted[2] = 3 (1.5 rounds up).
  DisplayOptions o = gray_options();
  o.lower_percentile = 30;
  o.upper_percentile = 37.5;
  const Histogram h = histogram(make_image(1, 7, {5, kNaN, 1, 4, kInf, 2, 3}), o);
  EXPECT_EQ(h.lo, 2.0);
  EXPECT_EQ(h.hi, 3.0);
}

TEST(DisplayRenderCpu, VminVmaxOverridePercentiles) {
  DisplayOptions o = gray_options();
  o.lower_percentile = 40;
  o.vmin = -1.0;
  o.vmax = 1.0;
  const Rgba out = render(make_image(1, 5, {-2.0f, -0.5f, 0.0f, 0.5f, 2.0f}), o);
  EXPECT_EQ(gray_indices(out), (std::vector<int>{0, 64, 128, 191, 255}));
  EXPECT_EQ(out.provenance.parameters["lo"].get<double>(), -1.0);
  EXPECT_EQ(out.provenance.parameters["hi"].get<double>(), 1.0);
}

TEST(DisplayRenderCpu, ConstantImageUsesFirstColour) {
  const Rgba out = render(make_image(2, 2, {3, 3, 3, 3}), DisplayOptions{});
  const Lut& v = colormap("viridis");
  for (std::size_t i = 0; i < 4; ++i)
    for (int c = 0; c < 4; ++c) EXPECT_EQ(out.rgba[4 * i + c], v[c]);
}

TEST(DisplayRenderCpu, AllNaNIsTransparent) {
  const Rgba out = render(make_image(2, 3, std::vector<float>(6, kNaN)), DisplayOptions{});
  EXPECT_EQ(std::count(out.rgba.begin(), out.rgba.end(), 0), 24);
}

TEST(DisplayRenderCpu, Provenance) {
  DisplayOptions o;
  o.colormap = "magma";
  o.scale = Scale::signed_log;
  o.lower_percentile = 1;
  o.upper_percentile = 99;
  const Rgba out = render(make_image(2, 3, {1, 2, 3, 4, 5, 6}), o);
  const Provenance& p = out.provenance;
  EXPECT_EQ(p.operation, "display.render");
  EXPECT_EQ(p.backend, "cpu");
  EXPECT_EQ(p.input_dtype, "float32");
  EXPECT_EQ(p.input_shape, (std::vector<std::size_t>{2, 3}));
  EXPECT_EQ(p.output_dtype, "uint8");
  EXPECT_EQ(p.output_shape, (std::vector<std::size_t>{2, 3, 4}));
  EXPECT_EQ(p.representation, "rgba8");
  EXPECT_EQ(p.parameters["colormap"], "magma");
  EXPECT_EQ(p.parameters["scale"], "signed_log");
  EXPECT_EQ(p.parameters["lower_percentile"].get<double>(), 1.0);
  EXPECT_EQ(p.parameters["upper_percentile"].get<double>(), 99.0);
  EXPECT_TRUE(p.parameters["vmin"].is_null());
  EXPECT_NEAR(p.parameters["lo"].get<double>(), std::log(2.0), 1e-6);  // sorted[round(0.01 * 5)] = sorted[0]: value 1
  EXPECT_NEAR(p.parameters["hi"].get<double>(), std::log(7.0), 1e-6);  // sorted[round(0.99 * 5)] = sorted[5]: value 6
}

TEST(DisplayRenderCpu, BadInputsRaise) {
  const Image<float> ok = make_image(1, 2, {1, 2});
  EXPECT_THROW(render(Image<float>{}, DisplayOptions{}), InvalidArgument);
  EXPECT_THROW(render(make_image(0, 5, {}), DisplayOptions{}), InvalidArgument);
  EXPECT_THROW(render(make_image(2, 2, {1, 2, 3}), DisplayOptions{}), InvalidArgument);
  auto with = [](auto f) {
    DisplayOptions o;
    f(o);
    return o;
  };
  EXPECT_THROW(render(ok, with([](auto& o) { o.colormap = "jet"; })), InvalidArgument);
  EXPECT_THROW(render(ok, with([](auto& o) { o.lower_percentile = 60, o.upper_percentile = 40; })),
               InvalidArgument);
  EXPECT_THROW(render(ok, with([](auto& o) { o.lower_percentile = -1; })), InvalidArgument);
  EXPECT_THROW(render(ok, with([](auto& o) { o.upper_percentile = 100.5; })), InvalidArgument);
  EXPECT_THROW(render(ok, with([](auto& o) { o.upper_percentile = std::nan(""); })), InvalidArgument);
  EXPECT_THROW(render(ok, with([](auto& o) { o.vmin = 2.0, o.vmax = 1.0; })), InvalidArgument);
  EXPECT_THROW(render(ok, with([](auto& o) { o.vmax = std::nan(""); })), InvalidArgument);
  EXPECT_THROW(render(ok, with([](auto& o) { o.vmin = 5.0; })), InvalidArgument);  // above max 2
  EXPECT_THROW(histogram(Image<float>{}, DisplayOptions{}), InvalidArgument);
  EXPECT_THROW(histogram(ok, with([](auto& o) { o.colormap = "nope"; })), InvalidArgument);
  EXPECT_THROW(fft_log_magnitude(Image<float>{}), InvalidArgument);
  // Equal percentiles are allowed: an empty range draws everything with colour 0.
  EXPECT_NO_THROW(render(ok, with([](auto& o) { o.lower_percentile = o.upper_percentile = 50; })));
}

TEST(DisplayRenderCpu, CudaWithoutGpuRaisesInsteadOfFallingBack) {
  if (detect().cuda_available) GTEST_SKIP() << "a GPU is present";
  const Image<float> ok = make_image(1, 2, {1, 2});
  EXPECT_THROW(render(on_backend(ok, Backend::cuda), DisplayOptions{}), BackendUnavailable);
  EXPECT_THROW(histogram(on_backend(ok, Backend::cuda), DisplayOptions{}), BackendUnavailable);
  EXPECT_THROW(fft_log_magnitude(on_backend(ok, Backend::cuda)), BackendUnavailable);
}

// render_indexed is render() without the colour lookup: the map's colour at each index is the rendered pixel, and
// the non-finite pixels (transparent black there) are counted.
TEST(DisplayRenderCpu, IndexedIsTheRenderBeforeTheColormap) {
  const Image<float> img = test::wide_range_image(61, 47, 5);
  for (Scale sc : {Scale::linear, Scale::log, Scale::signed_log}) {
    DisplayOptions o;
    o.scale = sc;
    o.lower_percentile = 2;
    o.upper_percentile = 98;
    const Rgba rgba = render(img, o);
    const Indexed ix = render_indexed(img, o);
    ASSERT_EQ(ix.index.size(), img.data.size());
    EXPECT_EQ(ix.rows, 61u);
    EXPECT_EQ(ix.provenance.parameters["lo"], rgba.provenance.parameters["lo"]);
    const Lut& lut = colormap(o.colormap);
    std::size_t clear = 0;
    for (std::size_t i = 0; i < img.data.size(); ++i) {
      if (!std::isfinite(img.data[i])) {
        ++clear;
        EXPECT_EQ(ix.index[i], 0);
        continue;
      }
      ASSERT_TRUE(std::equal(lut.begin() + 4 * ix.index[i], lut.begin() + 4 * ix.index[i] + 4, rgba.rgba.begin() + 4 * i)) << i;
    }
    EXPECT_GT(clear, 0u);
    EXPECT_EQ(ix.transparent, clear);
  }
}

}  // namespace
}  // namespace qgpu::display
