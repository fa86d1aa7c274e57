#pragma once
// SSB arithmetic shared by the host reference and the CUDA kernels (templated on float / double).
#include <cmath>
#include <cstddef>

#include "core/numbers.hpp"
#include "core/electron.hpp"
#include "core/hd.hpp"

namespace qgpu::ssb::detail {

// Relative slack of every aperture test |k|^2 <= kmax^2 (1 + kApertureSlack): points exactly on the rim (common
// when the scan and detector grids are commensurate) count as inside in float and double alike.
inline constexpr double kApertureSlack = 1e-5;
// Reconstruction denominator floor, as a fraction of the BF pixel count sum_K w_K (see ssb.hpp).
inline constexpr double kWeightFloor = 0.1;

// Relativistic electron wavelength in angstrom (core/electron.hpp: the one definition, shared with the sample).
inline double wavelength_angstrom(double energy_kev) { return electron_wavelength_angstrom(energy_kev); }

using qgpu::signed_frequency;  // core/numbers.hpp: numpy.fft.fftfreq numerator

// True for the Q set to zero: the DC term and, for even sizes, the Nyquist row / column.
QGPU_HD inline bool dropped_frequency(std::size_t i, std::size_t j, std::size_t nr, std::size_t nc) {
  return (i == 0 && j == 0) || (nr % 2 == 0 && i == nr / 2) || (nc % 2 == 0 && j == nc / 2);
}

// A scan-binned reconstruction (scan_bin b) lives on the (n / b)-point grid of each scan axis, whose frequencies are
// the full grid's of the same signed index (the low-pass part of the spectrum, |index| < n / 2b): its index i of
// n_small -> the full grid's index of n_full.
QGPU_HD inline std::size_t full_grid_index(std::size_t i, std::size_t n_small, std::size_t n_full) {
  const long long s = signed_frequency(i, n_small);
  return s >= 0 ? std::size_t(s) : std::size_t(static_cast<long long>(n_full) + s);
}

// chi(k) coefficients, precomputed on the host from Aberrations and the wavelength (see ssb.hpp).
template <class R> struct ChiCoeffs {
  R two_pi_over_lambda = 0, lambda = 0;
  R c1 = 0, c3 = 0;
  R a1 = 0, a1_cos = 1, a1_sin = 0;  // cos / sin of 2 * A1_angle
  R b2 = 0, b2_cos = 1, b2_sin = 0;  // of B2_angle
  R a2 = 0, a2_cos = 1, a2_sin = 0;  // of 3 * A2_angle
};

template <class R, class A> ChiCoeffs<R> chi_coeffs(const A& ab, double lambda) {
  ChiCoeffs<R> c;
  c.two_pi_over_lambda = R(2 * kPi / lambda);
  c.lambda = R(lambda);
  c.c1 = R(ab.C1);
  c.c3 = R(ab.C3);
  c.a1 = R(ab.A1);
  c.a1_cos = R(std::cos(2 * ab.A1_angle));
  c.a1_sin = R(std::sin(2 * ab.A1_angle));
  c.b2 = R(ab.B2);
  c.b2_cos = R(std::cos(ab.B2_angle));
  c.b2_sin = R(std::sin(ab.B2_angle));
  c.a2 = R(ab.A2);
  c.a2_cos = R(std::cos(3 * ab.A2_angle));
  c.a2_sin = R(std::sin(3 * ab.A2_angle));
  return c;
}

// chi at k = (ky, kx) = (row, col) components in 1/angstrom; omega = lambda (kx + i ky):
// Re(omega^2 e^{-2ia}) = l^2 [(kx^2 - ky^2) cos 2a + 2 kx ky sin 2a], Re(omega e^{-ia}) = l (kx cos a + ky sin a),
// Re(omega^3 e^{-3ia}) = l^3 [(kx^3 - 3 kx ky^2) cos 3a + (3 kx^2 ky - ky^3) sin 3a].
template <class R> QGPU_HD inline R chi(R ky, R kx, const ChiCoeffs<R>& c) {
  const R l = c.lambda;
  const R w2 = l * l * (kx * kx + ky * ky);
  const R re2 = l * l * ((kx * kx - ky * ky) * c.a1_cos + R(2) * kx * ky * c.a1_sin);
  const R re1 = l * (kx * c.b2_cos + ky * c.b2_sin);
  const R re3 = l * l * l * ((kx * kx * kx - R(3) * kx * ky * ky) * c.a2_cos + (R(3) * kx * kx * ky - ky * ky * ky) * c.a2_sin);
  const R s = c.c1 * w2 / R(2) + c.a1 * re2 / R(2) + c.b2 * w2 * re1 / R(3) + c.a2 * re3 / R(3) + c.c3 * w2 * w2 / R(4);
  return c.two_pi_over_lambda * s;
}

template <class R> QGPU_HD inline void sincos_r(R x, R* s, R* c) {
#ifdef __CUDA_ARCH__
  if constexpr (sizeof(R) == 4) {
    sincosf(x, s, c);
  } else {
    sincos(x, s, c);
  }
#else
  *s = std::sin(x);
  *c = std::cos(x);
#endif
}

// Gamma(K, Q) = A*(K) A(K-Q) - A(K) A*(K+Q) for a K inside the aperture (chi_k = chi(K)), A = aperture e^{-i chi}:
// A*(K) A(K-Q) = e^{i (chi(K) - chi(K-Q))} where |K-Q| <= kmax, A(K) A*(K+Q) = e^{i (chi(K+Q) - chi(K))} where
// |K+Q| <= kmax. kmax2 already holds the aperture slack. Returns false (Gamma = 0) outside both trotters.
template <class R>
QGPU_HD inline bool gamma(R ky, R kx, R chi_k, R qy, R qx, R kmax2, const ChiCoeffs<R>& c, R& re, R& im) {
  re = R(0);
  im = R(0);
  const R my = ky - qy, mx = kx - qx, py = ky + qy, px = kx + qx;
  const bool minus = my * my + mx * mx <= kmax2, plus = py * py + px * px <= kmax2;
  if (!minus && !plus) return false;
  if (minus) {
    R s, co;
    sincos_r<R>(chi_k - chi<R>(my, mx, c), &s, &co);
    re += co;
    im += s;
  }
  if (plus) {
    R s, co;
    sincos_r<R>(chi<R>(py, px, c) - chi_k, &s, &co);
    re -= co;
    im -= s;
  }
  return true;
}

// |Gamma| below which the phase-only weighting skips a K (py4DSTEM's threshold 1e-3; |Gamma| <= 2).
inline constexpr double kUnitGammaThreshold = 1e-3;

// Accumulates one K into the per-Q sums: num += G conj(Gamma), den += w |Gamma|^2. With unit_gamma (the
// phase-only weighting of py4DSTEM, Gamma / |Gamma|): num += G conj(Gamma) / |Gamma| where |Gamma| > 1e-3 (den
// unchanged, the caller normalises by the BF pixel count).
template <class R>
QGPU_HD inline void accumulate(R ky, R kx, R chi_k, R w, R qy, R qx, R kmax2, const ChiCoeffs<R>& c, R g_re,
                               R g_im, R& num_re, R& num_im, R& den, bool unit_gamma = false) {
  R gr, gi;
  if (!gamma<R>(ky, kx, chi_k, qy, qx, kmax2, c, gr, gi)) return;
  if (unit_gamma) {
    const R m2 = gr * gr + gi * gi;
    if (m2 <= R(kUnitGammaThreshold * kUnitGammaThreshold)) return;
#ifdef __CUDA_ARCH__
    const R inv = R(1) / sqrt(m2);
#else
    const R inv = R(1) / std::sqrt(m2);
#endif
    gr *= inv;
    gi *= inv;
    num_re += g_re * gr + g_im * gi;
    num_im += g_im * gr - g_re * gi;
    return;
  }
  num_re += g_re * gr + g_im * gi;
  num_im += g_im * gr - g_re * gi;
  den += w * (gr * gr + gi * gi);
}

}  // namespace qgpu::ssb::detail
