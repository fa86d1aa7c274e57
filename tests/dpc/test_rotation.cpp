// Rotation calibration: a curl-free field turned by a known angle (and transposed) is recovered.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>

#include "core/error.hpp"
#include "dpc/com.hpp"
#include "dpc/idpc.hpp"
#include "dpc/rotation.hpp"
#include "dpc_fixtures.hpp"

namespace qgpu::dpc {
namespace {

// What a detector would record for the scan-frame field g when calibrate_rotation should answer
// (angle_deg, transpose): m = T R(-angle) g, so that rotate_field(m, angle, transpose) = R(angle) T m = g.
DpcResult measured(const testing::AnalyticField& g, double angle_deg, bool transpose) {
  DpcResult d;
  d.dpc_row = testing::image(g.grad_row.rows, g.grad_row.cols);
  d.dpc_col = testing::image(g.grad_row.rows, g.grad_row.cols);
  const double a = -angle_deg * std::numbers::pi / 180, co = std::cos(a), si = std::sin(a);
  for (std::size_t i = 0; i < g.grad_row.data.size(); ++i) {
    const double fr = g.grad_row.data[i], fc = g.grad_col.data[i];
    const float rr = float(co * fr - si * fc), rc = float(si * fr + co * fc);
    d.dpc_row.data[i] = transpose ? rc : rr;
    d.dpc_col.data[i] = transpose ? rr : rc;
  }
  d.provenance.backend = "cpu";
  return d;
}

double angle_distance(double a, double b) {
  const double d = std::fmod(std::abs(a - b), 360.0);
  return std::min(d, 360.0 - d);
}

// RMS curl over the interior computed directly (central differences), independent of the library's algebra.
double direct_rms_curl(const Image<float>& fr, const Image<float>& fc) {
  double s = 0;
  std::size_t n = 0;
  for (std::size_t r = 1; r + 1 < fr.rows; ++r)
    for (std::size_t c = 1; c + 1 < fr.cols; ++c) {
      const double curl = (double(fc.at(r + 1, c)) - fc.at(r - 1, c)) / 2 - (double(fr.at(r, c + 1)) - fr.at(r, c - 1)) / 2;
      s += curl * curl;
      ++n;
    }
  return std::sqrt(s / double(n));
}

struct Case {
  double angle_deg;
  bool transpose;
};

class RecoverRotation : public ::testing::TestWithParam<Case> {};

TEST_P(RecoverRotation, AngleWithinOneDegreeAndTransposeFlag) {
  const Case k = GetParam();
  const testing::AnalyticField g = testing::gaussian_field(72, 64, 7);
  const DpcResult d = measured(g, k.angle_deg, k.transpose);
  const RotationResult r = calibrate_rotation(d);
  EXPECT_LT(angle_distance(r.angle_deg, k.angle_deg), 1.0) << "found " << r.angle_deg;
  EXPECT_EQ(r.transpose, k.transpose);
  EXPECT_GE(r.angle_deg, 0.0);
  EXPECT_LT(r.angle_deg, 360.0);

  // The corrected field is the scan-frame gradient (sign included: it points up the potential).
  const auto [fr, fc] = rotate_field(d, r.angle_deg, r.transpose);
  EXPECT_LT(testing::relative_difference(fr, g.grad_row), 0.02);
  EXPECT_LT(testing::relative_difference(fc, g.grad_col), 0.02);
  // Its curl is much smaller than its divergence; the wrong handedness cannot get there.
  EXPECT_LT(r.curl_rms, 0.05 * r.divergence_rms);
  const auto other = std::minmax_element(r.curl_by_angle.begin() + (r.transpose ? 0 : 360),
                                         r.curl_by_angle.begin() + (r.transpose ? 360 : 720));
  EXPECT_GT(*other.first, 5 * r.curl_rms);
}

INSTANTIATE_TEST_SUITE_P(Angles, RecoverRotation,
                         ::testing::Values(Case{37, false}, Case{37, true}, Case{217, false}, Case{0, false},
                                           Case{123.4, true}, Case{300, true}, Case{359.5, false}));

TEST(Rotation, CoarseCurveMatchesDirectCurlAndHasItsMinimumAtTheAngle) {
  const testing::AnalyticField g = testing::gaussian_field(48, 56, 21);
  const DpcResult d = measured(g, 37, false);
  const RotationResult r = calibrate_rotation(d);
  ASSERT_EQ(r.angles_deg.size(), 360u);
  ASSERT_EQ(r.curl_by_angle.size(), 720u);
  EXPECT_EQ(r.angles_deg[123], 123.0);
  for (int a : {0, 37, 90, 200, 333}) {
    for (bool t : {false, true}) {
      const auto [fr, fc] = rotate_field(d, a, t);
      EXPECT_NEAR(r.curl_by_angle[(t ? 360 : 0) + a], direct_rms_curl(fr, fc), 1e-4 * r.divergence_rms)
          << "angle " << a << " transpose " << t;
    }
  }
  // Curl minima at 37 and 217 (the 180-degree twins), not elsewhere.
  const auto first = r.curl_by_angle.begin();
  const std::size_t lo = std::min_element(first, first + 180) - first;
  const std::size_t hi = std::min_element(first + 180, first + 360) - first;
  EXPECT_EQ(lo, 37u);
  EXPECT_EQ(hi, 217u);
  EXPECT_EQ(r.provenance.operation, "dpc.calibrate_rotation");
  EXPECT_EQ(r.provenance.parameters.at("transpose"), false);
}

TEST(Rotation, RotateFieldTurnsRowAxisTowardsColAxis) {
  DpcResult d;
  d.dpc_row = testing::image(1, 1);
  d.dpc_col = testing::image(1, 1);
  d.dpc_row.data = {1.0f};
  d.dpc_col.data = {0.0f};
  auto [fr, fc] = rotate_field(d, 90, false);
  EXPECT_NEAR(fr.data[0], 0.0, 1e-7);
  EXPECT_NEAR(fc.data[0], 1.0, 1e-7);
  auto [tr, tc] = rotate_field(d, 0, true);  // transpose swaps the components
  EXPECT_EQ(tr.data[0], 0.0f);
  EXPECT_EQ(tc.data[0], 1.0f);
  EXPECT_EQ(tr.provenance.operation, "dpc.rotate_field");
}

TEST(Rotation, BadInputsAreRejected) {
  DpcResult tiny;
  tiny.dpc_row = testing::image(2, 5);
  tiny.dpc_col = testing::image(2, 5);
  EXPECT_THROW(calibrate_rotation(tiny), InvalidArgument);
  DpcResult mismatch;
  mismatch.dpc_row = testing::image(8, 8);
  mismatch.dpc_col = testing::image(8, 7);
  EXPECT_THROW(calibrate_rotation(mismatch), InvalidArgument);
  EXPECT_THROW(rotate_field(mismatch, 10, false), InvalidArgument);
  DpcResult nan_field;
  nan_field.dpc_row = testing::image(8, 8);
  nan_field.dpc_col = testing::image(8, 8);
  nan_field.dpc_col.data[5] = std::nanf("");
  EXPECT_THROW(calibrate_rotation(nan_field), InvalidArgument);
  EXPECT_THROW(rotate_field(DpcResult{}, 0, false), InvalidArgument);
}

// Maps larger than one block of the host loops (kHostBlock, 65536 values; these are 700x700 = 7.5 blocks, run on
// every core): the mean and the centred maps are exact for values whose sums are exact in double (multiples of
// 1/4), the rotation equals the per-value formula, and a non-finite value in the first or the last block is found.
TEST(RotateField, MapsOfManyBlocksAreExactAndEveryValueIsChecked) {
  const std::size_t n = 700;
  ComResult com;
  com.com_row = testing::image(n, n);
  com.com_col = testing::image(n, n);
  for (std::size_t i = 0; i < n * n; ++i) {
    com.com_row.data[i] = 90.0f + 0.25f * float(i % 4);  // mean 90.375
    com.com_col.data[i] = 96.0f - 0.5f * float(i % 2);   // mean 95.75
  }
  com.provenance.backend = "cpu";
  const DpcResult d = centered_dpc(com);
  EXPECT_EQ(d.ref_row, 90.375);
  EXPECT_EQ(d.ref_col, 95.75);
  for (std::size_t i = 0; i < n * n; ++i) {
    ASSERT_EQ(d.dpc_row.data[i], 0.25f * float(i % 4) - 0.375f) << i;
    ASSERT_EQ(d.dpc_col.data[i], 0.25f - 0.5f * float(i % 2)) << i;
  }
  const auto [fr, fc] = rotate_field(d, 17, false);
  const double co = std::cos(17 * std::numbers::pi / 180), si = std::sin(17 * std::numbers::pi / 180);
  for (std::size_t i = 0; i < n * n; i += 997) {
    EXPECT_EQ(fr.data[i], float(co * d.dpc_row.data[i] - si * d.dpc_col.data[i])) << i;
    EXPECT_EQ(fc.data[i], float(si * d.dpc_row.data[i] + co * d.dpc_col.data[i])) << i;
  }
  for (const std::size_t at : {std::size_t{0}, n * n - 1}) {
    SCOPED_TRACE(at);
    DpcResult bad = d;
    bad.dpc_col.data[at] = std::numeric_limits<float>::infinity();
    EXPECT_THROW(rotate_field(bad, 17, false), InvalidArgument);
    Image<float> gr = fr;
    gr.data[at] = std::nanf("");
    EXPECT_THROW(idpc(gr, fc), InvalidArgument);
  }
}

TEST(RotateField, KeepsItsInputsBackend) {
  DpcResult d = measured(testing::gaussian_field(16, 12, 4), 20, false);
  d.provenance.backend = "cuda";  // host arithmetic, but the maps belong to a GPU chain: idpc must run there
  const auto [fr, fc] = rotate_field(d, 20, false);
  EXPECT_EQ(fr.provenance.backend, "cuda");
  EXPECT_EQ(fc.provenance.backend, "cuda");
  EXPECT_EQ(fr.provenance.parameters.at("computed_on"), "host");
}

TEST(RotationConfidence, CleanFieldIsDetermined) {
  const RotationResult r = calibrate_rotation(measured(testing::gaussian_field(72, 64, 7), 30, true));
  EXPECT_TRUE(r.determined);
  EXPECT_GE(r.confidence, 0.5);  // an exactly curl-free field: the margins are near 1
  EXPECT_EQ(r.confidence, std::min({r.angle_margin, r.transpose_margin, r.flip_margin}));
  EXPECT_EQ(rotation_warning(r), "");
  EXPECT_EQ(r.provenance.parameters.at("determined"), true);
}

TEST(RotationConfidence, FieldWithoutStructureIsUndeterminedAndWarns) {
  // Independent noise in both components: curl and divergence alike at every angle and either transpose.
  DpcResult d;
  d.dpc_row = testing::image(64, 64);
  d.dpc_col = testing::image(64, 64);
  std::uint64_t x = 88172645463325252ull;
  auto next = [&x] {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    return float(double(x >> 11) * 0x1.0p-53 - 0.5);
  };
  for (std::size_t i = 0; i < 64 * 64; ++i) d.dpc_row.data[i] = next(), d.dpc_col.data[i] = next();
  d.provenance.backend = "cpu";
  const RotationResult r = calibrate_rotation(d);
  EXPECT_FALSE(r.determined);
  EXPECT_LT(r.confidence, kRotationConfident);
  EXPECT_NE(rotation_warning(r).find("undetermined"), std::string::npos);
  EXPECT_EQ(r.provenance.parameters.at("warning"), rotation_warning(r));
}

}  // namespace
}  // namespace qgpu::dpc
