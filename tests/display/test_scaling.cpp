#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <limits>

#include "core/error.hpp"
#include "display/range.hpp"
#include "display/scaling.hpp"

namespace qgpu::display {
namespace {

TEST(DisplayScaling, DetLogMatchesStdLog) {
  for (double x : {1.0, 1.0000001, 1.5, 1.41421356, 1.41421357, 2.0, 2.718281828459045, 3.0, 10.0, 1e-300, 1e-10,
                   0.1, 0.7, 123456.789, 1e10, 1e38, 1e300}) {
    const double want = std::log(x);
    EXPECT_NEAR(det_log(x), want, 1e-15 * std::max(1.0, std::fabs(want))) << x;
  }
  EXPECT_EQ(det_log(1.0), 0.0);
}

TEST(DisplayScaling, DetLogDenseSweep) {
  // Every mantissa region, including both sides of the sqrt(2) fold.
  double worst = 0;
  for (double x = 1.0; x < 1e6; x *= 1.0007)
    worst = std::max(worst, std::fabs(det_log(x) - std::log(x)) / std::log(x + 1));
  EXPECT_LT(worst, 1e-15);
}

TEST(DisplayScaling, DetLog1pAccurateForTinyArguments) {
  for (double x : {0.0, 1e-30, 1e-17, 1e-12, 1e-8, 1e-3, 0.5, 1.0, 1e5}) {
    const double want = std::log1p(x);
    EXPECT_NEAR(det_log1p(x), want, 1e-15 * want) << x;
  }
}

TEST(DisplayScaling, LogScaleWithin1e6OfStdLog) {
  for (float v : {1e-30f, 1e-7f, 0.001f, 0.5f, 1.0f, 3.0f, 1000.0f, 65535.0f, 1e20f, 3e38f}) {
    const double want = std::log1p(static_cast<double>(v));
    EXPECT_NEAR(scale_value(v, Scale::log), want, 1e-6 * want) << v;
    EXPECT_NEAR(scale_value(v, Scale::signed_log), want, 1e-6 * want) << v;
    EXPECT_NEAR(scale_value(-v, Scale::signed_log), -want, 1e-6 * want) << v;
    EXPECT_EQ(scale_value(-v, Scale::log), 0.0f) << v;  // log(1 + max(v, 0))
    EXPECT_EQ(scale_value(v, Scale::linear), v);
    EXPECT_EQ(scale_value(-v, Scale::linear), -v);
  }
}

TEST(DisplayScaling, SignedLogIsOddAndZeroIsPositive) {
  for (float v : {0.25f, 7.0f, 1e9f}) EXPECT_EQ(scale_value(-v, Scale::signed_log), -scale_value(v, Scale::signed_log));
  for (Scale s : {Scale::linear, Scale::log, Scale::signed_log}) {
    EXPECT_FALSE(std::signbit(scale_value(-0.0f, s)));
    EXPECT_FALSE(std::signbit(scale_value(0.0f, s)));
  }
}

TEST(DisplayScaling, IsFinite) {
  EXPECT_TRUE(is_finite(0.0f));
  EXPECT_TRUE(is_finite(-3.5f));
  EXPECT_TRUE(is_finite(std::numeric_limits<float>::max()));
  EXPECT_TRUE(is_finite(std::numeric_limits<float>::denorm_min()));
  EXPECT_FALSE(is_finite(std::numeric_limits<float>::infinity()));
  EXPECT_FALSE(is_finite(-std::numeric_limits<float>::infinity()));
  EXPECT_FALSE(is_finite(std::numeric_limits<float>::quiet_NaN()));
}

TEST(DisplayScaling, ColorIndexFormula) {
  EXPECT_EQ(color_index(0.0f, 0.0, 4.0), 0);
  EXPECT_EQ(color_index(1.0f, 0.0, 4.0), 64);   // 63.75 + 0.5
  EXPECT_EQ(color_index(2.0f, 0.0, 4.0), 128);  // 127.5 + 0.5
  EXPECT_EQ(color_index(3.0f, 0.0, 4.0), 191);  // 191.25 + 0.5
  EXPECT_EQ(color_index(4.0f, 0.0, 4.0), 255);
  EXPECT_EQ(color_index(-1e30f, 0.0, 4.0), 0);    // clipped below
  EXPECT_EQ(color_index(1e30f, 0.0, 4.0), 255);   // clipped above
  EXPECT_EQ(color_index(5.0f, 5.0, 5.0), 0);      // empty range
  EXPECT_EQ(color_index(-0.5f, -1.0, 1.0), 64);   // 63.75 + 0.5
  for (int i = 0; i < 256; ++i) EXPECT_EQ(color_index(static_cast<float>(i), 0.0, 255.0), i);
}

TEST(DisplayRange, PercentileRankRoundsHalfUp) {
  EXPECT_EQ(percentile_rank(0.0, 5), 0u);
  EXPECT_EQ(percentile_rank(30.0, 5), 1u);   // 1.2
  EXPECT_EQ(percentile_rank(37.5, 5), 2u);   // 1.5 -> 2
  EXPECT_EQ(percentile_rank(40.0, 5), 2u);   // 1.6
  EXPECT_EQ(percentile_rank(100.0, 5), 4u);
  EXPECT_EQ(percentile_rank(50.0, 1), 0u);
  EXPECT_EQ(percentile_rank(99.0, 101), 99u);
}

TEST(DisplayRange, ExplicitEndsOverridePercentiles) {
  DisplayOptions o;
  o.lower_percentile = 10;
  o.upper_percentile = 90;
  o.vmin = -2.0;
  const Range r = resolve_range(o, 101, [](std::size_t k) { return static_cast<float>(k); });
  EXPECT_EQ(r.lo, -2.0);
  EXPECT_EQ(r.hi, 90.0);
  o.vmax = 7.5;
  const Range r2 = resolve_range(o, 101, [](std::size_t) -> float { throw std::logic_error("data not needed"); });
  EXPECT_EQ(r2.lo, -2.0);
  EXPECT_EQ(r2.hi, 7.5);
}

TEST(DisplayRange, VminAboveUpperPercentileRaises) {
  DisplayOptions o;
  o.vmin = 1000.0;
  EXPECT_THROW(resolve_range(o, 10, [](std::size_t k) { return static_cast<float>(k); }), InvalidArgument);
}

TEST(DisplayRange, NoFinitePixelsGivesZeroRange) {
  const Range r = resolve_range(DisplayOptions{}, 0, {});
  EXPECT_EQ(r.lo, 0.0);
  EXPECT_EQ(r.hi, 0.0);
}

TEST(DisplayScale, Names) {
  EXPECT_EQ(scale_from_name("linear"), Scale::linear);
  EXPECT_EQ(scale_from_name("log"), Scale::log);
  EXPECT_EQ(scale_from_name("signed_log"), Scale::signed_log);
  EXPECT_EQ(scale_name(Scale::signed_log), "signed_log");
  EXPECT_THROW(scale_from_name("sqrt"), InvalidArgument);
  EXPECT_THROW(scale_from_name("Log"), InvalidArgument);
}

}  // namespace
}  // namespace qgpu::display
