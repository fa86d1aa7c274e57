// The C1 sign convention, stated in docs/conventions.md: Krivanek C1, chi = pi lambda C1 k^2, probe exp(-i chi),
// object exp(+i phi); positive C1 = overfocus (C1 = -defocus of py4DSTEM / abTEM / Kirkland). Fails if it flips.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <numbers>

#include "dpc/com.hpp"
#include "dpc/rotation.hpp"
#include "io/sample/sample.hpp"
#include "ssb/ssb.hpp"
#include "ssb/ssb_math.hpp"
#include "ssb_fixtures.hpp"

namespace qgpu::ssb {
namespace {

// chi of pure C1 is +pi lambda C1 k^2 (the Krivanek form, w^2 C1 / 2 * 2 pi / lambda with w = lambda k).
TEST(SsbConventions, ChiOfPositiveC1IsPositivePiLambdaC1K2) {
  Aberrations a;
  a.C1 = 150;
  const double lambda = detail::wavelength_angstrom(300);
  const detail::ChiCoeffs<double> c = detail::chi_coeffs<double>(a, lambda);
  for (double k : {0.2, 0.5, 1.0}) {
    EXPECT_NEAR(detail::chi<double>(0.0, k, c), std::numbers::pi * lambda * 150 * k * k, 1e-12);
    EXPECT_NEAR(detail::chi<double>(k * 0.6, k * 0.8, c), std::numbers::pi * lambda * 150 * k * k, 1e-12);
    EXPECT_GT(detail::chi<double>(k, 0.0, c), 0.0);
  }
}

// Stationary phase: IFFT of exp(-i pi lambda C1 k^2) is ~ exp(+i pi r^2 / (lambda C1)): for C1 > 0 the probe's phase
// grows outwards (a wave diverging from a crossover upstream of the specimen: overfocus), for C1 < 0 it falls.
// Checked on the simulator's probe at r = 1 A (inside the geometric disk alpha |C1| = 3 A), 25% tolerance for the
// aperture's ripples.
TEST(SsbConventions, SimulatedProbePhaseCurvatureHasTheSignOfC1) {
  for (double c1 : {150.0, -150.0}) {
    sample::SampleSpec s = testing::spec(c1);
    const std::vector<std::complex<float>> p = sample::probe_wave(s);
    const sample::Sampling sm = sample::sampling(s);
    const std::size_t n = s.det_cols, r0 = s.det_rows / 2, c0 = s.det_cols / 2;
    const double r_angstrom = 1.0;
    const auto dc = std::size_t(std::lround(r_angstrom / sm.dx_angstrom));
    const double r = double(dc) * sm.dx_angstrom;
    const double dphi = std::arg(p[r0 * n + c0 + dc] / p[r0 * n + c0]);
    const double expected = std::numbers::pi * r * r / (sm.wavelength_angstrom * c1);
    EXPECT_NEAR(dphi, expected, 0.25 * std::abs(expected)) << "C1 " << c1;
    EXPECT_GT(dphi * c1, 0.0) << "C1 " << c1;
  }
}

// Data simulated with C1 = +150 A: the SSB fit (searching both signs) returns +150 within 2%.
TEST(SsbConventions, FitReturnsThePositiveC1OfTheSimulation) {
  const Dataset& ds = testing::dataset(150);
  SsbParams p = testing::true_params(150);
  p.aberrations.C1 = 0;
  FitOptions o;
  o.trials = 40;
  o.c1_min = -400;
  o.c1_max = 400;
  o.detector_bin = 2;
  const FitResult f = fit(ds, p, o);
  EXPECT_NEAR(f.aberrations.C1, 150.0, 0.02 * 150.0);
}

// One rotation convention for the whole API: on in-focus data whose detector is turned by 90 degrees (new pixel (r, c)
// = old pixel (c, 64 - r)), dpc::calibrate_rotation reports 270 degrees without transpose, and that very angle
// given to SSB reproduces the reconstruction of the unturned data.
TEST(SsbConventions, SsbTakesTheRotationTheDpcCalibrationReports) {
  const Dataset& ds = testing::dataset(0);
  const Shape4D& sh = ds.shape();
  HostArray4D rot;
  rot.shape = sh;
  rot.dtype = ds.dtype();
  rot.bytes.assign(ds.host_bytes().size(), 0);
  const auto* src = reinterpret_cast<const std::uint16_t*>(ds.host_bytes().data());
  auto* dst = rot.as<std::uint16_t>();
  for (std::size_t f = 0; f < sh.frames(); ++f)
    for (std::size_t r = 1; r < sh.det_rows; ++r)
      for (std::size_t c = 0; c < sh.det_cols; ++c) dst[f * 4096 + r * 64 + c] = src[f * 4096 + c * 64 + (64 - r)];
  const Dataset turned = Dataset::from_host(std::move(rot), ds.metadata(), ds.provenance());

  const dpc::RotationResult cal = dpc::calibrate_rotation(dpc::centered_dpc(dpc::center_of_mass(turned)));
  EXPECT_FALSE(cal.transpose);
  EXPECT_LT(std::abs(std::remainder(cal.angle_deg - 270.0, 360.0)), 2.0) << "reported " << cal.angle_deg;

  SsbParams p = testing::true_params(0);
  p.disk_center = std::pair<double, double>{32.0, 32.0};
  const SsbResult ref = reconstruct(ds, p);
  p.rotation_deg = cal.angle_deg;
  p.transpose = cal.transpose;
  EXPECT_GE(testing::pearson(reconstruct(turned, p).phase.data, ref.phase.data), 0.99);
}

// transpose swaps the detector axes before the rotation: a transposed detector (new (r, c) = old (c, r)) with
// transpose = true is the original K set in another order.
TEST(SsbConventions, TransposeUndoesSwappedDetectorAxes) {
  const Dataset& ds = testing::dataset(100);
  const Shape4D& sh = ds.shape();
  HostArray4D t;
  t.shape = sh;
  t.dtype = ds.dtype();
  t.bytes.assign(ds.host_bytes().size(), 0);
  const auto* src = reinterpret_cast<const std::uint16_t*>(ds.host_bytes().data());
  auto* dst = t.as<std::uint16_t>();
  for (std::size_t f = 0; f < sh.frames(); ++f)
    for (std::size_t r = 0; r < sh.det_rows; ++r)
      for (std::size_t c = 0; c < sh.det_cols; ++c) dst[f * 4096 + r * 64 + c] = src[f * 4096 + c * 64 + r];
  const Dataset swapped = Dataset::from_host(std::move(t), ds.metadata(), ds.provenance());
  SsbParams p = testing::true_params(100);
  p.disk_center = std::pair<double, double>{32.0, 32.0};
  const SsbResult ref = reconstruct(ds, p);
  p.transpose = true;
  const SsbResult r = reconstruct(swapped, p);
  EXPECT_LT(testing::relative_l2(r, ref), 1e-6);
  EXPECT_EQ(r.provenance.parameters.at("transpose").get<bool>(), true);
  p.transpose = false;
  EXPECT_LT(testing::pearson(reconstruct(swapped, p).phase.data, testing::truth(100)), 0.5);
}

// The two-fold astigmatism angle against py4DSTEM (docs/conventions.md): py4DSTEM's chi
// (process/phase/utils.py ComplexProbe.evaluate_chi, polar_symbols C10, C12, phi12) is written out here from its
// formula, on its own axes: kx along the first array axis (meshgrid indexing "ij": our rows), ky along the second,
// phi = arctan2(ky, kx), alpha = lambda |k|, chi = 2 pi / lambda * alpha^2 / 2 * (C10 + C12 cos 2 (phi - phi12)).
// Ours measures the angle from the col axis towards the row axis, so (C1, A1, a1) = (C10, C12, 90 deg - phi12).
TEST(SsbConventions, AstigmatismAngleMapsToPy4dstemPhi12) {
  const double lambda = detail::wavelength_angstrom(300), pi = std::numbers::pi;
  for (const double a1_deg : {20.0, -35.0, 110.0}) {
    Aberrations a;
    a.C1 = -80;
    a.A1 = 30;
    a.A1_angle = a1_deg * pi / 180;
    const detail::ChiCoeffs<double> c = detail::chi_coeffs<double>(a, lambda);
    const double C10 = a.C1, C12 = a.A1, phi12 = (90.0 - a1_deg) * pi / 180;  // the mapping under test
    for (double k_row = -0.9; k_row <= 0.9; k_row += 0.3)
      for (double k_col = -0.9; k_col <= 0.9; k_col += 0.3) {
        const double kx = k_row, ky = k_col;  // py4DSTEM's axes
        const double alpha = lambda * std::hypot(kx, ky), phi = std::atan2(ky, kx);
        const double py4dstem = 2 * pi / lambda * 0.5 * alpha * alpha * (C10 + C12 * std::cos(2 * (phi - phi12)));
        EXPECT_NEAR(detail::chi<double>(k_row, k_col, c), py4dstem, 1e-9) << a1_deg << " deg at " << k_row << ", " << k_col;
      }
  }
  // The unmapped angle (phi12 = a1) is another aberration: the test above fails if the mapping is dropped.
  Aberrations a;
  a.A1 = 30;
  a.A1_angle = 20 * pi / 180;
  const detail::ChiCoeffs<double> c = detail::chi_coeffs<double>(a, lambda);
  const double phi = std::atan2(0.5, 0.2), alpha = lambda * std::hypot(0.2, 0.5);
  const double wrong = 2 * pi / lambda * 0.5 * alpha * alpha * 30 * std::cos(2 * (phi - 20 * pi / 180));
  EXPECT_GT(std::abs(detail::chi<double>(0.2, 0.5, c) - wrong), 0.1 * std::abs(wrong));
}

}  // namespace
}  // namespace qgpu::ssb
