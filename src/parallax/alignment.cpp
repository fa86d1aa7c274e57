// The parallax alignment loop on the dataset's backend: staged discs of BF-disk groups, each correlated with the
// reference predicted by the previous stage's linear fit, the sideband model from that fit (parallax.hpp, steps 2-3).
#include <algorithm>
#include <cmath>
#include <vector>

#include "core/numbers.hpp"
#include "parallax/parallax.hpp"
#include "parallax/parallax_internal.hpp"

namespace qgpu::parallax::detail {

namespace {

constexpr double kStages[] = {0.3, 0.55, 0.8, 1.0};  // fractions of the largest group offset, see align_and_fit
constexpr double kSidebandMinConfidence = 0.5;       // see sideband_for

// The sideband model (parallax_backend.hpp) from the current linear model: P (angstrom) from the polar
// decomposition of M (S up to its sign: C1 and A1), each group's tilt in the scan frame K_g = -P^-1 (M d_g) step /
// lambda (the pair (P, K) or (-P, -K): the classes of K and -K at Q and -Q are the same model, the sign ambiguity
// does not matter); the phase alpha(Q) = pi lambda Q.P Q is recorded, the model does not use it. With P near singular (|A1| close to |C1|: K_g ill-determined) the isotropic |C1| = sqrt |det M| is used.
// Off while the linear model does not explain the shifts (confidence < kSidebandMinConfidence: e.g. in focus, where
// the shifts are noise).
detail::Sideband sideband_for(const detail::Plan& plan, const Geometry& geo, const ParallaxParams& p, const double m[4],
                              double confidence) {
  detail::Sideband sb;
  if (!(confidence >= kSidebandMinConfidence)) return sb;
  const double rad_per_px = geo.mrad_per_px * 1e-3, to_angstrom = p.scan_step_angstrom / rad_per_px;
  const Polar pl = polar(m);
  double s00 = pl.p00 * to_angstrom, s01 = pl.p01 * to_angstrom, s11 = pl.p11 * to_angstrom;
  const double tr = 0.5 * (s00 + s11), dev = std::hypot(0.5 * (s00 - s11), s01);
  const double small = std::abs(std::abs(tr) - dev), large = std::abs(tr) + dev;  // |C1 -+ A1|
  if (!(small > 0.3 * large)) {  // isotropic fallback
    const double c1_abs = std::sqrt(std::abs(m[0] * m[3] - m[1] * m[2])) * to_angstrom;
    s00 = s11 = c1_abs;
    s01 = 0;
  }
  const double det = s00 * s11 - s01 * s01;
  if (!(std::abs(det) > 0) || !std::isfinite(det)) return sb;
  sb.on = true;
  sb.k_aperture = geo.radius_px * rad_per_px / geo.lambda;
  sb.a_rr = kPi * geo.lambda * s00;
  sb.a_rc = kPi * geo.lambda * s01;
  sb.a_cc = kPi * geo.lambda * s11;
  sb.q_row = 1.0 / (double(plan.scan_rows) * p.scan_step_angstrom);
  sb.q_col = 1.0 / (double(plan.scan_cols) * p.scan_step_angstrom);
  const double i00 = s11 / det, i01 = -s01 / det, i11 = s00 / det;  // P^-1 (1/angstrom)
  for (std::size_t g = 0; g < plan.groups(); ++g) {
    const double sr = (m[0] * plan.det_row[g] + m[1] * plan.det_col[g]) * p.scan_step_angstrom;
    const double sc = (m[2] * plan.det_row[g] + m[3] * plan.det_col[g]) * p.scan_step_angstrom;
    sb.k.push_back({-(i00 * sr + i01 * sc) / geo.lambda, -(i01 * sr + i11 * sc) / geo.lambda});
  }
  return sb;
}

}  // namespace

Run align_and_fit(const Dataset& ds, const ParallaxParams& p) {
  Run run;
  run.plan = make_plan(ds, p, run.geo);
  run.engine = make_engine(ds, run.plan);
  run.bf = run.engine->mean_image();
  // Staged alignment (crystals correlate at every lattice vector): the inner groups first (small shifts, searched
  // around zero), then wider discs searched around the shifts the previous linear fit predicts; each stage's
  // reference is the mean of all images shifted by that prediction.
  const std::size_t ng = run.plan.groups();
  double dmax = 0;
  for (std::size_t g = 0; g < ng; ++g) dmax = std::max(dmax, std::hypot(run.plan.det_row[g], run.plan.det_col[g]));
  std::vector<double> stages(kStages, kStages + sizeof(kStages) / sizeof(kStages[0]));
  for (std::size_t it = 1; it < p.iterations; ++it) stages.push_back(1.0);
  std::vector<detail::Shift> predicted(ng);
  ParallaxFit& f = run.fit;
  double m[4] = {0, 0, 0, 0}, b[2] = {0, 0};
  std::vector<bool> use(ng);
  std::vector<float> weight(ng), windows;
  for (std::size_t st = 0; st < stages.size(); ++st) {
    std::size_t used = 0;
    for (std::size_t g = 0; g < ng; ++g) {
      use[g] = std::hypot(run.plan.det_row[g], run.plan.det_col[g]) <= stages[st] * dmax + 1e-9;
      weight[g] = use[g] ? 1.0f : 0.0f;
      used += use[g];
    }
    if (used < 3) continue;
    run.engine->set_reference(predicted, weight);
    run.measured = run.engine->correlate(predicted, p.search_px, &windows);
    // The joint fit from two starts, the better kept: the least squares of the per-group peaks (outliers at low dose
    // can throw it far off, e.g. in the first stage at 1000 counts per frame) and the model that centred the windows.
    double mp[4] = {m[0], m[1], m[2], m[3]}, bp[2] = {b[0], b[1]};
    fit_linear(run.plan, run.measured, use, m, b, f.residual_rms_px, f.model_rms_px);
    const double f_ls = refine_jointly(run.plan, windows, predicted, use, p.search_px, m, b);
    const double f_prev = refine_jointly(run.plan, windows, predicted, use, p.search_px, mp, bp);
    if (f_prev > f_ls) {
      std::copy(mp, mp + 4, m);
      std::copy(bp, bp + 2, b);
      residuals(run.plan, run.measured, use, m, b, f.residual_rms_px, f.model_rms_px);
    }
    for (std::size_t g = 0; g < ng; ++g)
      predicted[g] = {m[0] * run.plan.det_row[g] + m[1] * run.plan.det_col[g] + b[0],
                      m[2] * run.plan.det_row[g] + m[3] * run.plan.det_col[g] + b[1]};
    const double confidence = f.model_rms_px > 0 ? 1.0 - f.residual_rms_px / f.model_rms_px : 0.0;
    run.engine->set_sideband(sideband_for(run.plan, run.geo, p, m, confidence));
  }
  run.engine->set_sideband(detail::Sideband{});
  run.fitted = predicted;
  finish_fit(run, p, m, b);
  return run;
}

}  // namespace qgpu::parallax::detail
