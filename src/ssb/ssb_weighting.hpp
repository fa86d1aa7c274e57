#pragma once
// Internal: the weightings of the SSB double-overlap sum (ssb.hpp, Weighting) shared by both backends.
//
// Per scan frequency Q the engines hold num(Q) = sum_K G conj(Gamma) and den(Q) = sum_K w |Gamma|^2 (Poisson noise:
// Var num = N I0 den, since Var G(K, Q) = sum_R I(K, R) = N I0 w_K). The Wiener weighting estimates the object's
// phase power S per ring of |Q| (width kWienerShellWidth coarser scan-frequency spacings) from the data,
//   S_ring = sum_ring (|num|^2 - N I0 den) / sum_ring (I0 N den)^2   (unbiased: E|num|^2 = (I0 N den)^2 S + N I0 den),
// and returns Psi = num / (I0 N (den + 1 / (I0 N S_ring))), 0 where S_ring <= 0: the least-squares estimate
// num / (I0 N den) times S / (S + noise power), the minimum-mean-square-error linear estimate for that spectrum.
#include <complex>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "ssb/ssb.hpp"
#include "ssb/ssb_backend.hpp"

namespace qgpu::ssb::detail {

// Ring width of the Wiener spectrum estimate, in the coarser of the two scan-frequency spacings.
inline constexpr double kWienerShellWidth = 2.0;

// The ring of every Q of the full (half: half_spectrum) scan spectrum, row-major; computed in double on the host
// so both backends use the same rings.
std::vector<std::int32_t> wiener_rings(const Plan& plan, bool half_spectrum, std::size_t& ring_count);

// Per-ring S from the sums; `mult` is the Hermitian multiplicity of each entry (1 for the full spectrum).
// i0n = I0 * N.
std::vector<double> wiener_ring_power(const std::vector<std::int32_t>& rings, std::size_t ring_count,
                                      const std::complex<double>* num, const double* den, const double* mult,
                                      std::size_t count, double i0n);

// The weighting that `auto` resolves to for a dose (mean counts per frame inside the BF disk), with the reason.
Weighting resolve_weighting(Weighting requested, double bf_counts_per_frame, std::string& reason);

}  // namespace qgpu::ssb::detail
