// The C1 sign convention, stated in docs/conventions.md: Krivanek C1, chi = pi lambda C1 k^2, probe exp(-i chi),
// object exp(+i phi); positive C1 = overfocus (C1 = -defocus of py4DSTEM / abTEM / Kirkland). Fails if it flips.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <numbers>

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

}  // namespace
}  // namespace qgpu::ssb
