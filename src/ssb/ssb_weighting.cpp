#include "ssb/ssb_weighting.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/error.hpp"
#include "ssb/ssb_math.hpp"

namespace qgpu::ssb {

std::string weighting_name(Weighting w) {
  switch (w) {
    case Weighting::automatic: return "auto";
    case Weighting::amplitude: return "amplitude";
    case Weighting::phase: return "phase";
    case Weighting::wiener: return "wiener";
  }
  return "?";
}

Weighting parse_weighting(const std::string& name) {
  for (Weighting w : {Weighting::automatic, Weighting::amplitude, Weighting::phase, Weighting::wiener})
    if (name == weighting_name(w)) return w;
  throw InvalidArgument("ssb: unknown weighting '" + name + "' (known: auto, amplitude, phase, wiener)");
}

namespace detail {

std::vector<std::int32_t> wiener_rings(const Plan& plan, bool half_spectrum, std::size_t& ring_count) {
  const std::size_t nr = plan.scan_rows, nc = plan.scan_cols, ncols = half_spectrum ? nc / 2 + 1 : nc;
  const double spacing = std::max(1.0 / (double(nr) * plan.step), 1.0 / (double(nc) * plan.step));
  const double width = kWienerShellWidth * spacing;
  std::vector<std::int32_t> rings(nr * ncols);
  std::int32_t top = 0;
  for (std::size_t i = 0; i < nr; ++i)
    for (std::size_t j = 0; j < ncols; ++j) {
      const double qy = plan.qy(i), qx = plan.qx(j);
      const auto r = std::int32_t(std::floor(std::sqrt(qy * qy + qx * qx) / width + 0.5));
      rings[i * ncols + j] = r;
      top = std::max(top, r);
    }
  ring_count = std::size_t(top) + 1;
  return rings;
}

std::vector<double> wiener_ring_power(const std::vector<std::int32_t>& rings, std::size_t ring_count,
                                      const std::complex<double>* num, const double* den, const double* mult,
                                      std::size_t count, double i0n) {
  std::vector<double> a(ring_count, 0.0), b(ring_count, 0.0), s(ring_count, 0.0);
  for (std::size_t q = 0; q < count; ++q) {
    if (!(den[q] > 0)) continue;
    const double m = mult ? mult[q] : 1.0;
    a[rings[q]] += m * (std::norm(num[q]) - i0n * den[q]);
    b[rings[q]] += m * (i0n * den[q]) * (i0n * den[q]);
  }
  for (std::size_t r = 0; r < ring_count; ++r) s[r] = b[r] > 0 ? a[r] / b[r] : 0.0;
  return s;
}

Weighting resolve_weighting(Weighting requested, double bf_counts_per_frame, std::string& reason) {
  char buf[256];
  if (requested != Weighting::automatic) {
    reason = "given";
    return requested;
  }
  if (bf_counts_per_frame < kAutoWienerBelowCounts) {
    std::snprintf(buf, sizeof(buf),
                  "auto: %.4g counts per frame in the BF disk < %.0f: wiener (best truth correlation measured below "
                  "this dose, docs/benchmarks.md)",
                  bf_counts_per_frame, kAutoWienerBelowCounts);
    reason = buf;
    return Weighting::wiener;
  }
  std::snprintf(buf, sizeof(buf),
                "auto: %.4g counts per frame in the BF disk >= %.0f: amplitude (noise negligible; unit transfer, "
                "quantitative phase)",
                bf_counts_per_frame, kAutoWienerBelowCounts);
  reason = buf;
  return Weighting::amplitude;
}

}  // namespace detail

}  // namespace qgpu::ssb
