// pattern_log: diffraction patterns shown so that the faint dark-field halo is visible next to the BF disk.
#include <gtest/gtest.h>

#include <cmath>

#include "core/error.hpp"
#include "display/display.hpp"
#include "display/pattern.hpp"
#include "test_images.hpp"

namespace qgpu::display {
namespace {

using test::make_image;

TEST(DisplayPattern, LogInUnitsOfTheFaintestSignal) {
  Image<float> p = make_image(1, 5, {0.0f, 0.004f, 0.001f, 5.0f, -1.0f});
  p.provenance.backend = "cpu";
  p.provenance.operation = "detector.mean_pattern";
  const Image<float> v = pattern_log(p);
  EXPECT_FLOAT_EQ(v.data[0], 0.0f);
  EXPECT_FLOAT_EQ(v.data[1], float(std::log1p(4.0)));
  EXPECT_FLOAT_EQ(v.data[2], float(std::log(2.0)));
  EXPECT_FLOAT_EQ(v.data[3], float(std::log1p(5000.0)));
  EXPECT_FLOAT_EQ(v.data[4], 0.0f);  // negative values show as no signal
  EXPECT_DOUBLE_EQ(v.provenance.parameters.at("eps").get<double>(), double(0.001f));
  EXPECT_EQ(v.provenance.backend, "cpu");
  EXPECT_EQ(v.provenance.parameters.at("input_operation"), "detector.mean_pattern");
}

TEST(DisplayPattern, HaloIsVisibleWherePlainLogHidesIt) {
  // 1000 pixels: a BF disk of 50 at 5 counts, a halo of 200 at 1e-3, the rest 0.
  std::vector<float> d(1000, 0.0f);
  for (std::size_t i = 0; i < 50; ++i) d[i] = 5.0f;
  for (std::size_t i = 50; i < 250; ++i) d[i] = 1e-3f;
  const Image<float> p = make_image(1, 1000, d);
  DisplayOptions o = pattern_display_options("gray");
  const Rgba shown = render(pattern_log(p), o);
  DisplayOptions plain;
  plain.colormap = "gray";
  plain.scale = Scale::log;
  const Rgba hidden = render(p, plain);
  EXPECT_EQ(hidden.rgba[4 * 100], 0);  // log(1 + v): the halo is black
  EXPECT_GE(shown.rgba[4 * 100], 15);  // halo gray level: log 2 / log 5001 of the range
  EXPECT_EQ(shown.rgba[4 * 500], 0);   // no signal stays black
  EXPECT_EQ(shown.rgba[0], 255);       // the disk is white
}

TEST(DisplayPattern, EmptyOrSignalFreePatternsAreRejected) {
  EXPECT_THROW(pattern_log(Image<float>{}), InvalidArgument);
  EXPECT_THROW(pattern_log(make_image(1, 3, {0, 0, -1})), InvalidArgument);
}

}  // namespace
}  // namespace qgpu::display
