// Analytic pieces of SSB: wavelength, chi, and the Gamma (trotter) geometry.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <numbers>

#include "io/sample/sample.hpp"
#include "ssb/ssb.hpp"
#include "ssb/ssb_math.hpp"

namespace qgpu::ssb {
namespace {

using detail::chi;
using detail::chi_coeffs;
using detail::ChiCoeffs;
constexpr double kPi = std::numbers::pi;

TEST(SsbMath, Wavelength300kV) {
  EXPECT_NEAR(detail::wavelength_angstrom(300), 0.019687, 2e-6);  // 1.969 pm
  EXPECT_NEAR(detail::wavelength_angstrom(200), 0.025079, 2e-6);
}

TEST(SsbMath, ChiOfPureDefocusMatchesTheSimulator) {
  Aberrations a;
  a.C1 = 100;
  const double l = detail::wavelength_angstrom(300);
  const ChiCoeffs<double> c = chi_coeffs<double>(a, l);
  // |k| = 0.5 1/A in any direction: chi = pi lambda C1 k^2 = 1.546252 rad.
  EXPECT_NEAR(chi<double>(0.3, 0.4, c), kPi * l * 100 * 0.25, 1e-12);
  EXPECT_NEAR(chi<double>(-0.5, 0.0, c), 1.546252, 1e-6);
  EXPECT_NEAR(chi<double>(0.0, 0.0, c), 0.0, 1e-15);
  const ChiCoeffs<float> cf = chi_coeffs<float>(a, l);
  EXPECT_NEAR(chi<float>(0.3f, 0.4f, cf), 1.546252f, 2e-6f);
}

TEST(SsbMath, ChiHigherOrderTermsFollowTheKrivanekForm) {
  const double l = detail::wavelength_angstrom(300), k = 0.8;
  Aberrations a;
  a.A1 = 50;  // 2-fold: +pi lambda A1 k^2 along its angle, - perpendicular
  a.A1_angle = 0.3;
  ChiCoeffs<double> c = chi_coeffs<double>(a, l);
  auto at = [&](double phi) { return chi<double>(k * std::sin(phi), k * std::cos(phi), c); };  // (ky, kx)
  EXPECT_NEAR(at(0.3), kPi * l * 50 * k * k, 1e-9);
  EXPECT_NEAR(at(0.3 + kPi / 2), -kPi * l * 50 * k * k, 1e-9);
  EXPECT_NEAR(at(0.3 + kPi / 4), 0.0, 1e-9);

  a = {};
  a.B2 = 2000;  // coma: 2 pi / 3 B2 lambda^2 k^3 cos(phi - angle)
  a.B2_angle = -1.0;
  c = chi_coeffs<double>(a, l);
  EXPECT_NEAR(at(-1.0), 2 * kPi / 3 * 2000 * l * l * k * k * k, 1e-9);
  EXPECT_NEAR(at(-1.0 + kPi), -2 * kPi / 3 * 2000 * l * l * k * k * k, 1e-9);
  EXPECT_NEAR(at(-1.0 + kPi / 2), 0.0, 1e-9);

  a = {};
  a.A2 = 3000;  // 3-fold: cos 3(phi - angle)
  a.A2_angle = 0.2;
  c = chi_coeffs<double>(a, l);
  EXPECT_NEAR(at(0.2), 2 * kPi / 3 * 3000 * l * l * k * k * k, 1e-9);
  EXPECT_NEAR(at(0.2 + kPi / 3), -2 * kPi / 3 * 3000 * l * l * k * k * k, 1e-9);

  a = {};
  a.C3 = 1e5;  // spherical: pi / 2 C3 lambda^3 k^4
  c = chi_coeffs<double>(a, l);
  EXPECT_NEAR(at(1.234), kPi / 2 * 1e5 * l * l * l * k * k * k * k, 1e-9);
}

std::complex<double> gamma_at(double ky, double kx, double qy, double qx, const Aberrations& a, double l,
                              double kmax, bool* inside = nullptr) {
  const ChiCoeffs<double> c = chi_coeffs<double>(a, l);
  double re, im;
  const bool in = detail::gamma<double>(ky, kx, chi<double>(ky, kx, c), qy, qx, kmax * kmax, c, re, im);
  if (inside) *inside = in;
  return {re, im};
}

TEST(SsbMath, TrotterGeometryForAKnownQ) {
  // Aperture |K| <= 1, Q = 0.8 along the column axis, no aberrations: Gamma = +1 where only K - Q is inside the
  // aperture, -1 where only K + Q is, 0 in the triple overlap and outside both double overlaps.
  const Aberrations none;
  const double l = 0.02, qy = 0, qx = 0.8;
  bool in = false;
  EXPECT_EQ(gamma_at(0, 0.5, qy, qx, none, l, 1, &in), std::complex<double>(1, 0));
  EXPECT_TRUE(in);
  EXPECT_EQ(gamma_at(0, -0.5, qy, qx, none, l, 1, &in), std::complex<double>(-1, 0));
  EXPECT_EQ(gamma_at(0, 0, qy, qx, none, l, 1, &in), std::complex<double>(0, 0));  // triple overlap
  EXPECT_TRUE(in);
  gamma_at(0.9, 0, qy, qx, none, l, 1, &in);
  EXPECT_FALSE(in);

  // Areas on a fine grid: Gamma = +1 region = lens(d = 0.8) - triple overlap = lens(0.8) - lens(1.6).
  auto lens = [](double d) { return 2 * std::acos(d / 2) - d / 2 * std::sqrt(4 - d * d); };
  const double h = 0.004;
  double plus = 0, minus = 0;
  for (double y = -1; y <= 1; y += h)
    for (double x = -1; x <= 1; x += h) {
      if (x * x + y * y > 1) continue;
      const std::complex<double> g = gamma_at(y, x, qy, qx, none, l, 1);
      plus += g.real() > 0.5;
      minus += g.real() < -0.5;
    }
  const double expected = lens(0.8) - lens(1.6);  // 1.2583
  EXPECT_NEAR(plus * h * h, expected, 0.01 * expected);
  EXPECT_NEAR(minus * h * h, expected, 0.01 * expected);
}

TEST(SsbMath, GammaCarriesTheAberrationPhasesAndIsAntiHermitianInQ) {
  Aberrations a;
  a.C1 = 120;
  a.A1 = 30;
  a.A1_angle = 0.7;
  a.C3 = 2e4;
  const double l = detail::wavelength_angstrom(300), kmax = 1.0;
  const ChiCoeffs<double> c = chi_coeffs<double>(a, l);
  // Only K - Q inside: Gamma = exp(i (chi(K) - chi(K - Q))).
  const double ky = 0.1, kx = 0.5, qy = 0.05, qx = 0.8;
  const std::complex<double> g = gamma_at(ky, kx, qy, qx, a, l, kmax);
  const double expect = chi<double>(ky, kx, c) - chi<double>(ky - qy, kx - qx, c);
  EXPECT_NEAR(g.real(), std::cos(expect), 1e-12);
  EXPECT_NEAR(g.imag(), std::sin(expect), 1e-12);
  // Gamma(K, -Q) = -conj(Gamma(K, Q)) for any K, Q (this makes Psi anti-Hermitian, the object 1 + i phi).
  for (double t = 0; t < 6; t += 0.37) {
    const double y = 0.6 * std::sin(t), x = 0.6 * std::cos(1.3 * t), py = 0.3 * std::cos(t), px = -0.7 + 0.2 * t;
    const std::complex<double> gp = gamma_at(y, x, py, px, a, l, kmax), gm = gamma_at(y, x, -py, -px, a, l, kmax);
    EXPECT_NEAR(std::abs(gm + std::conj(gp)), 0.0, 1e-12);
  }
}

TEST(SsbMath, FrequencyGridAndDroppedTerms) {
  EXPECT_EQ(detail::signed_frequency(0, 5), 0);
  EXPECT_EQ(detail::signed_frequency(2, 5), 2);
  EXPECT_EQ(detail::signed_frequency(3, 5), -2);
  EXPECT_EQ(detail::signed_frequency(2, 4), -2);
  EXPECT_TRUE(detail::dropped_frequency(0, 0, 4, 5));
  EXPECT_TRUE(detail::dropped_frequency(2, 1, 4, 5));   // Nyquist row of an even size
  EXPECT_FALSE(detail::dropped_frequency(1, 2, 4, 5));  // odd size: no Nyquist column
  EXPECT_TRUE(detail::dropped_frequency(1, 3, 4, 6));
}

}  // namespace
}  // namespace qgpu::ssb
