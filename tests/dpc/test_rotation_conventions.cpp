// Rotation conventions against the peers (docs/conventions.md): a field known in scan axes is "measured" on a
// detector turned by a known angle (and transposed); our calibrate_rotation must report that (angle, transpose), and
// the mapped LiberTEM (scan_rotation, flip_y) and py4DSTEM (rotation, transpose) values, applied with the peers' own
// matrices (written out here from their code), must bring the measured field back to the scan-axes field.
//
// Ours (dpc/rotation.hpp), on (row, col): transpose first, then R(a) = [[cos a, -sin a], [sin a, cos a]].
// LiberTEM (libertem/udf/com.py apply_correction, corrections/coordinates.py), on (y, x) = (row, col):
//   field = rotate(s) @ F^flip_y @ raw, rotate(s) = [[cos s, sin s], [-sin s, cos s]], F = diag(-1, 1).
// py4DSTEM (process/phase/phase_base_class.py), com_x = rows (axis 0), com_y = cols: untransposed
//   x' = cos t x - sin t y, y' = sin t x + cos t y; transposed: x and y swapped first.
// Mapping: LiberTEM (s, flip_y) = (-a, false) or (90 - a, true); py4DSTEM (t, transpose) = (a, transpose), its
// default search covers [-89, 90) only, so it reports a - 180 when a is outside that range (the field's sign flips).
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "dpc/rotation.hpp"
#include "dpc_fixtures.hpp"

namespace qgpu::dpc {
namespace {

constexpr double kDeg = std::numbers::pi / 180;

struct Vec {
  double r, c;
};

// The detector's reading of a scan-frame vector g for the true (angle, transpose): ours^-1 g.
Vec to_detector(Vec g, double a_deg, bool transpose) {
  const double a = -a_deg * kDeg;
  const Vec u{std::cos(a) * g.r - std::sin(a) * g.c, std::sin(a) * g.r + std::cos(a) * g.c};
  return transpose ? Vec{u.c, u.r} : u;
}

Vec libertem_apply(Vec raw, double scan_rotation_deg, bool flip_y) {
  const double s = scan_rotation_deg * kDeg;
  const Vec f{flip_y ? -raw.r : raw.r, raw.c};
  return {std::cos(s) * f.r + std::sin(s) * f.c, -std::sin(s) * f.r + std::cos(s) * f.c};
}

Vec py4dstem_apply(Vec raw, double rotation_deg, bool transpose) {
  const double t = rotation_deg * kDeg;
  const double x = transpose ? raw.c : raw.r, y = transpose ? raw.r : raw.c;
  return {std::cos(t) * x - std::sin(t) * y, std::sin(t) * x + std::cos(t) * y};
}

struct Peer {
  double libertem_scan_rotation;
  bool libertem_flip_y;
  double py4dstem_rotation;  // in its default search range [-89, 90)
  bool py4dstem_transpose;
  bool py4dstem_sign_flipped;  // its field = -ours (the 180-degree choice it leaves open)
};

Peer map_to_peers(double a_deg, bool transpose) {
  Peer p;
  p.libertem_flip_y = transpose;
  p.libertem_scan_rotation = std::remainder(transpose ? 90.0 - a_deg : -a_deg, 360.0);
  p.py4dstem_transpose = transpose;
  double t = std::remainder(a_deg, 360.0);  // (-180, 180]
  p.py4dstem_sign_flipped = t < -89.0 || t >= 90.0;
  if (t >= 90.0) t -= 180.0;
  if (t < -89.0) t += 180.0;
  p.py4dstem_rotation = t;
  return p;
}

class RotationConventions : public ::testing::TestWithParam<std::pair<double, bool>> {};

TEST_P(RotationConventions, OursAndTheMappedPeerValuesUndoAKnownRotation) {
  const auto [angle, transpose] = GetParam();
  const testing::AnalyticField g = testing::gaussian_field(72, 64, 11);
  DpcResult d;
  d.dpc_row = testing::image(72, 64);
  d.dpc_col = testing::image(72, 64);
  for (std::size_t i = 0; i < g.grad_row.data.size(); ++i) {
    const Vec m = to_detector({g.grad_row.data[i], g.grad_col.data[i]}, angle, transpose);
    d.dpc_row.data[i] = float(m.r);
    d.dpc_col.data[i] = float(m.c);
  }
  d.provenance.backend = "cpu";
  const RotationResult r = calibrate_rotation(d);
  EXPECT_EQ(r.transpose, transpose);
  const double err = std::abs(std::remainder(r.angle_deg - angle, 360.0));
  EXPECT_LT(err, 0.5) << "reported " << r.angle_deg;

  // Our reported values and the mapped peer values each restore the scan-frame field (analytic matrices).
  const Peer p = map_to_peers(r.angle_deg, r.transpose);
  const auto [cr, cc] = rotate_field(d, r.angle_deg, r.transpose);
  double worst_ours = 0, worst_lt = 0, worst_py = 0, scale = 0;
  for (std::size_t i = 0; i < g.grad_row.data.size(); ++i) {
    const Vec truth{g.grad_row.data[i], g.grad_col.data[i]}, raw{d.dpc_row.data[i], d.dpc_col.data[i]};
    const Vec lt = libertem_apply(raw, p.libertem_scan_rotation, p.libertem_flip_y);
    const Vec py = py4dstem_apply(raw, p.py4dstem_rotation, p.py4dstem_transpose);
    const double sign = p.py4dstem_sign_flipped ? -1.0 : 1.0;
    worst_ours = std::max({worst_ours, std::abs(cr.data[i] - truth.r), std::abs(cc.data[i] - truth.c)});
    worst_lt = std::max({worst_lt, std::abs(lt.r - truth.r), std::abs(lt.c - truth.c)});
    worst_py = std::max({worst_py, std::abs(sign * py.r - truth.r), std::abs(sign * py.c - truth.c)});
    scale = std::max({scale, std::abs(truth.r), std::abs(truth.c)});
  }
  EXPECT_LT(worst_ours, 0.01 * scale);
  EXPECT_LT(worst_lt, 0.01 * scale);
  EXPECT_LT(worst_py, 0.01 * scale);
}

INSTANTIATE_TEST_SUITE_P(KnownRotations, RotationConventions,
                         ::testing::Values(std::pair{30.0, false}, std::pair{250.0, false}, std::pair{30.0, true},
                                           std::pair{200.0, true}));

// The table of docs/conventions.md, checked value by value.
TEST(RotationConventionsTable, MappedValues) {
  Peer p = map_to_peers(30, false);
  EXPECT_DOUBLE_EQ(p.libertem_scan_rotation, -30);
  EXPECT_FALSE(p.libertem_flip_y);
  EXPECT_DOUBLE_EQ(p.py4dstem_rotation, 30);
  EXPECT_FALSE(p.py4dstem_sign_flipped);
  p = map_to_peers(30, true);
  EXPECT_DOUBLE_EQ(p.libertem_scan_rotation, 60);
  EXPECT_TRUE(p.libertem_flip_y);
  EXPECT_TRUE(p.py4dstem_transpose);
  p = map_to_peers(250, false);
  EXPECT_DOUBLE_EQ(p.libertem_scan_rotation, 110);
  EXPECT_DOUBLE_EQ(p.py4dstem_rotation, 70);
  EXPECT_TRUE(p.py4dstem_sign_flipped);
}

}  // namespace
}  // namespace qgpu::dpc
