// The fit of the parallax shifts: least squares and the joint fit of the linear model s = M d + b, its polar
// decomposition into defocus, astigmatism, rotation and transpose, the sign of C1; ParallaxFit's verdicts, fit_json.
#include <fftw3.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <limits>
#include <mutex>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/fftw_planner.hpp"
#include "core/numbers.hpp"
#include "parallax/parallax.hpp"
#include "parallax/parallax_internal.hpp"

namespace qgpu::parallax {

namespace detail {

namespace {

// Catmull-Rom weights (value and derivative) of the 4 taps around t in [0, 1).
void catmull_rom(double t, double w[4], double dw[4]) {
  w[0] = ((-t + 2) * t - 1) * t / 2;
  w[1] = ((3 * t - 5) * t * t + 2) / 2;
  w[2] = ((-3 * t + 4) * t + 1) * t / 2;
  w[3] = (t - 1) * t * t / 2;
  dw[0] = (-3 * t * t + 4 * t - 1) / 2;
  dw[1] = (9 * t * t - 10 * t) / 2;
  dw[2] = (-9 * t * t + 8 * t + 1) / 2;
  dw[3] = (3 * t * t - 2 * t) / 2;
}

double wrap360(double deg) {
  double a = std::fmod(deg, 360.0);
  if (a < 0) a += 360.0;
  return a >= 360.0 ? 0.0 : a;
}

// Skewness of the tilt-corrected scan-resolution image after flipping the sign of the defocus CTF
// sin(pi lambda |C1| Q^2): positive when C1 > 0 (the image is then ~ +CTF * phase and atoms have positive phase).
double corrected_skewness(const std::vector<float>& img, std::size_t nr, std::size_t nc, double step, double lambda,
                          double c1_abs) {
  const std::size_t n = nr * nc;
  FftwComplex buf(n);
  FftwPlan fwd, inv;
  {
    std::lock_guard<std::mutex> lock(fftw_planner_mutex());
    fwd.p = fftw_plan_dft_2d(int(nr), int(nc), buf.p, buf.p, FFTW_FORWARD, FFTW_ESTIMATE);
    inv.p = fftw_plan_dft_2d(int(nr), int(nc), buf.p, buf.p, FFTW_BACKWARD, FFTW_ESTIMATE);
  }
  if (!fwd.p || !inv.p) throw Error("FFTW: cannot plan the parallax sign transforms");
  for (std::size_t s = 0; s < n; ++s) buf.c()[s] = img[s];
  fftw_execute(fwd.p);
  for (std::size_t i = 0; i < nr; ++i)
    for (std::size_t j = 0; j < nc; ++j) {
      const double qy = double(signed_frequency(i, nr, true)) / (double(nr) * step);
      const double qx = double(signed_frequency(j, nc, true)) / (double(nc) * step);
      const double ctf = std::sin(kPi * lambda * c1_abs * (qy * qy + qx * qx));
      buf.c()[i * nc + j] *= (i == 0 && j == 0) ? 0.0 : (ctf < 0 ? -1.0 : 1.0);
    }
  fftw_execute(inv.p);
  double m2 = 0, m3 = 0, mean = 0;
  for (std::size_t s = 0; s < n; ++s) mean += buf.c()[s].real();
  mean /= double(n);
  for (std::size_t s = 0; s < n; ++s) {
    const double d = buf.c()[s].real() - mean;
    m2 += d * d;
    m3 += d * d * d;
  }
  m2 /= double(n);
  m3 /= double(n);
  return m2 > 0 ? m3 / std::pow(m2, 1.5) : 0.0;
}

}  // namespace

// Least squares s = M d + b (3 unknowns per component, normal equations solved by Cramer's rule).
void fit_linear(const detail::Plan& plan, const std::vector<detail::Shift>& s, const std::vector<bool>& use,
                double m[4], double b[2], double& residual_rms, double& model_rms) {
  const std::size_t n = plan.groups();
  double a[3][3] = {{0, 0, 0}, {0, 0, 0}, {0, 0, 0}}, yr[3] = {0, 0, 0}, yc[3] = {0, 0, 0};
  std::size_t used = 0;
  for (std::size_t g = 0; g < n; ++g) {
    if (!use[g]) continue;
    ++used;
    const double x[3] = {plan.det_row[g], plan.det_col[g], 1.0};
    for (int i = 0; i < 3; ++i) {
      for (int j = 0; j < 3; ++j) a[i][j] += x[i] * x[j];
      yr[i] += x[i] * s[g].row;
      yc[i] += x[i] * s[g].col;
    }
  }
  auto det3 = [](const double q[3][3]) {
    return q[0][0] * (q[1][1] * q[2][2] - q[1][2] * q[2][1]) - q[0][1] * (q[1][0] * q[2][2] - q[1][2] * q[2][0]) +
           q[0][2] * (q[1][0] * q[2][1] - q[1][1] * q[2][0]);
  };
  const double d = det3(a);
  require(std::abs(d) > 1e-12, "the BF-disk groups do not span the detector plane (cannot fit the shifts)");
  auto solve = [&](const double y[3], double out[3]) {
    for (int k = 0; k < 3; ++k) {
      double q[3][3];
      for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) q[i][j] = j == k ? y[i] : a[i][j];
      out[k] = det3(q) / d;
    }
  };
  double r[3], c[3];
  solve(yr, r);
  solve(yc, c);
  m[0] = r[0], m[1] = r[1], m[2] = c[0], m[3] = c[1];
  b[0] = r[2], b[1] = c[2];
  residuals(plan, s, use, m, b, residual_rms, model_rms);
}

// rms of s - (M d + b) and of M d over the groups in use.
void residuals(const detail::Plan& plan, const std::vector<detail::Shift>& s, const std::vector<bool>& use,
               const double m[4], const double b[2], double& residual_rms, double& model_rms) {
  const std::size_t n = plan.groups();
  std::size_t used = 0;
  double res = 0, mod = 0;
  for (std::size_t g = 0; g < n; ++g) {
    if (!use[g]) continue;
    ++used;
    const double pr = m[0] * plan.det_row[g] + m[1] * plan.det_col[g], pc = m[2] * plan.det_row[g] + m[3] * plan.det_col[g];
    res += std::pow(s[g].row - pr - b[0], 2) + std::pow(s[g].col - pc - b[1], 2);
    mod += pr * pr + pc * pc;
  }
  residual_rms = std::sqrt(res / double(used));
  model_rms = std::sqrt(mod / double(used));
}

// Joint fit of the linear model: maximises sum_g c_g(M d_g + b) over the groups in use, c_g the correlation of group g
// on its window (Catmull-Rom interpolated; a model that puts a group outside its window's interior is not admissible:
// -infinity), from the start (m, b); returns the maximum. Why: the per-group peak (argmax + parabola) is a non-linear
// function of a noisy map; at low dose the maps' asymmetric flanks win often enough to bias the least squares of the
// peaks (C1 +10 % at 4000 counts per frame on the 96 px sample), while the expectation of the summed correlation is
// the noise-free one (leave-one-out reference), so its maximum does not move with the dose. Gradient ascent in shift
// units (matrix entries times the rms group offset, scan px), step 0.1 px growing 1.3x on success, halving on
// failure, stopping below 1e-4 px (or after 1000 steps).
double refine_jointly(const detail::Plan& plan, const std::vector<float>& windows, const std::vector<detail::Shift>& centre,
                    const std::vector<bool>& use, std::size_t w, double m[4], double b[2]) {
  const std::size_t ng = plan.groups();
  const long hw = long(w), side = 2 * hw + 1;
  const double none = -std::numeric_limits<double>::infinity();
  if (hw < 2) return none;  // the cubic needs a tap either side inside the window
  double d2 = 0;
  std::size_t used = 0;
  for (std::size_t g = 0; g < ng; ++g)
    if (use[g]) d2 += plan.det_row[g] * plan.det_row[g] + plan.det_col[g] * plan.det_col[g], ++used;
  if (used < 3) return none;
  const double dscale = std::sqrt(d2 / double(used));
  if (!(dscale > 0)) return none;
  // theta = (m00 D, m01 D, b0, m10 D, m11 D, b1), D = dscale
  auto objective = [&](const double th[6], double grad[6]) {
    double total = 0;
    std::fill(grad, grad + 6, 0.0);
    for (std::size_t g = 0; g < ng; ++g) {
      if (!use[g]) continue;
      const double x[3] = {plan.det_row[g] / dscale, plan.det_col[g] / dscale, 1.0};
      const double sr = th[0] * x[0] + th[1] * x[1] + th[2], sc = th[3] * x[0] + th[4] * x[1] + th[5];
      const long cr = std::lround(centre[g].row), cc = std::lround(centre[g].col);
      // window coordinates; outside the interior (the 4 taps inside) the model is not admissible
      const double yr = sr - double(cr - hw), yc = sc - double(cc - hw);
      if (!(yr >= 1.0 && yr < double(side) - 2.0 && yc >= 1.0 && yc < double(side) - 2.0)) return none;
      const long ir = long(std::floor(yr)), ic = long(std::floor(yc));
      double wr[4], dwr[4], wc[4], dwc[4];
      catmull_rom(yr - double(ir), wr, dwr);
      catmull_rom(yc - double(ic), wc, dwc);
      const float* win = windows.data() + g * std::size_t(side * side);
      double v = 0, gr = 0, gc = 0;
      for (int a = 0; a < 4; ++a)
        for (int k = 0; k < 4; ++k) {
          const double z = win[(ir - 1 + a) * side + (ic - 1 + k)];
          v += wr[a] * wc[k] * z;
          gr += dwr[a] * wc[k] * z;
          gc += wr[a] * dwc[k] * z;
        }
      total += v;
      for (int i = 0; i < 3; ++i) grad[i] += gr * x[i], grad[3 + i] += gc * x[i];
    }
    return total;
  };
  double th[6] = {m[0] * dscale, m[1] * dscale, b[0], m[2] * dscale, m[3] * dscale, b[1]}, grad[6], tg[6], tn[6];
  double f = objective(th, grad), step = 0.1;
  for (int it = 0; it < 1000 && step > 1e-4; ++it) {
    double gn = 0;
    for (double q : grad) gn += q * q;
    gn = std::sqrt(gn);
    if (!(gn > 0)) break;
    for (int i = 0; i < 6; ++i) tn[i] = th[i] + step * grad[i] / gn;
    const double fn = objective(tn, tg);
    if (fn > f) {
      std::copy(tn, tn + 6, th);
      std::copy(tg, tg + 6, grad);
      f = fn;
      step *= 1.3;
    } else {
      step *= 0.5;
    }
  }
  m[0] = th[0] / dscale, m[1] = th[1] / dscale, m[2] = th[3] / dscale, m[3] = th[4] / dscale;
  b[0] = th[2], b[1] = th[5];
  return f;
}

Polar polar(const double m[4]) {
  Polar o;
  double q[4] = {m[0], m[1], m[2], m[3]};
  o.transpose = q[0] * q[3] - q[1] * q[2] < 0;
  if (o.transpose) {  // M' = M T (T swaps row and col): swap the columns
    std::swap(q[0], q[1]);
    std::swap(q[2], q[3]);
  }
  o.phi = std::atan2(q[2] - q[1], q[0] + q[3]);  // polar rotation of M' = P R(phi)
  const double cp = std::cos(o.phi), sp = std::sin(o.phi);
  // P = M' R(phi)^T, symmetrised
  o.p00 = q[0] * cp - q[1] * sp;
  o.p11 = q[2] * sp + q[3] * cp;
  o.p01 = 0.5 * ((q[0] * sp + q[1] * cp) + (q[2] * cp - q[3] * sp));
  return o;
}


// The fit from the final linear model (m scan px per detector px, b scan px): confidence, the matrix in angstrom
// per radian, its polar decomposition, the sign of C1 (the nominal sign, else the skewness of the CTF-corrected
// tilt-corrected image, which needs run.engine and run.fitted), C1, A1, the rotation.
void finish_fit(Run& run, const ParallaxParams& p, const double m[4], const double b[2]) {
  ParallaxFit& f = run.fit;
  f.offset_row = b[0];
  f.offset_col = b[1];
  f.confidence = f.model_rms_px > 0 ? std::max(0.0, 1.0 - f.residual_rms_px / f.model_rms_px) : 0.0;
  // Physical units: angstrom of scan shift per radian of detector tilt.
  const double scale = p.scan_step_angstrom / (run.geo.mrad_per_px * 1e-3);
  for (int i = 0; i < 4; ++i) f.matrix[i] = m[i] * scale;
  const Polar pl = polar(f.matrix);
  f.transpose = pl.transpose;
  const double phi = pl.phi, p00 = pl.p00, p11 = pl.p11, p01 = pl.p01;
  const double c1_abs = 0.5 * (p00 + p11);

  // The sign of C1 (equivalently the 180-degree choice).
  double sign = 0;
  if (p.c1_sign_hint != 0) {
    sign = p.c1_sign_hint > 0 ? 1 : -1;
    f.sign_method = "nominal defocus sign";
    f.sign_confidence = 1;
  } else {
    const std::vector<float> tc = run.engine->aligned_mean(run.fitted, std::vector<float>(run.fitted.size(), 1.0f));
    const double sk = corrected_skewness(tc, run.plan.scan_rows, run.plan.scan_cols, p.scan_step_angstrom,
                                         run.geo.lambda, c1_abs);
    sign = sk >= 0 ? 1 : -1;
    f.sign_method = "skewness of the tilt-corrected image";
    f.sign_confidence = std::min(1.0, std::abs(sk));
  }
  // M' = -S R(a): S = sign * P; a = phi + 180 for S = P, a = phi for S = -P.
  const double s00 = sign * p00, s11 = sign * p11, s01 = sign * p01;
  f.C1 = 0.5 * (s00 + s11);
  const double ac = 0.5 * (s11 - s00), as = s01;
  f.A1 = std::hypot(ac, as);
  f.A1_angle = 0.5 * std::atan2(as, ac);
  f.rotation_deg = wrap360(phi * 180.0 / kPi + (sign > 0 ? 180.0 : 0.0));
}

}  // namespace detail

double ParallaxFit::conditioning() const {
  const double a = std::abs(C1 + A1), b = std::abs(C1 - A1), hi = std::max(a, b);
  return hi > 0 ? std::min(a, b) / hi : 0.0;
}
bool ParallaxFit::shifts_determined() const {
  return confidence >= kParallaxConfident && conditioning() >= kWellConditioned;
}
bool ParallaxFit::sign_determined() const { return sign_confidence >= kSignConfident; }
bool ParallaxFit::determined() const { return shifts_determined() && sign_determined(); }

std::string ParallaxFit::warning() const {
  if (determined()) return "";
  char buf[480];
  if (!(confidence >= kParallaxConfident))
    std::snprintf(buf, sizeof buf,
                  "no parallax measured (confidence %.2f < %.2f): the data is in focus or too noisy for the shift fit, "
                  "so C1, astigmatism and rotation from it are not reliable (bin the detector, --bin, or use more dose)",
                  confidence, kParallaxConfident);
  else if (!shifts_determined())
    std::snprintf(buf, sizeof buf,
                  "the shift field is nearly rank one (|C1 - A1| / |C1 + A1| = %.2f < %.2f: C1 %.1f A, A1 %.1f A): its "
                  "transpose and rotation are not determined (astigmatism close to the defocus, or noise)",
                  conditioning(), kWellConditioned, C1, A1);
  else
    std::snprintf(buf, sizeof buf,
                  "the sign of C1 is undetermined (sign confidence %.2f < %.2f, %s): |C1| = %.1f A, rotation %.2f or "
                  "%.2f deg (transpose %s); give the sign (--defocus-sign, Python defocus_sign=)",
                  sign_confidence, kSignConfident, sign_method.c_str(), std::abs(C1), rotation_deg,
                  std::fmod(rotation_deg + 180.0, 360.0), transpose ? "yes" : "no");
  return buf;
}

nlohmann::json fit_json(const ParallaxFit& f) {
  return {{"C1_angstrom", f.C1},
          {"C1_convention", "ssb: chi = +pi lambda C1 k^2 (the simulator's defocus_angstrom); shift s(K) = -C1 * tilt"},
          {"A1_angstrom", f.A1},
          {"A1_angle_rad", f.A1_angle},
          {"rotation_deg", f.rotation_deg},
          {"transpose", f.transpose},
          {"rotation_convention", "dpc/rotation.hpp: transpose first, then rotate (row axis towards col axis); "
                                  "the same angle and transpose as qgpu ssb --rotation/--transpose take"},
          {"matrix_angstrom_per_rad", {f.matrix[0], f.matrix[1], f.matrix[2], f.matrix[3]}},
          {"offset_px", {f.offset_row, f.offset_col}},
          {"residual_rms_px", f.residual_rms_px},
          {"model_rms_px", f.model_rms_px},
          {"confidence", f.confidence},
          {"sign_method", f.sign_method},
          {"sign_confidence", f.sign_confidence},
          {"C1_abs_angstrom", std::abs(f.C1)},
          {"conditioning", f.conditioning()},
          {"shifts_determined", f.shifts_determined()},
          {"sign_determined", f.sign_determined()},
          {"determined", f.determined()},
          {"determined_rule", "confidence >= 0.6 and conditioning >= 0.3 (shifts), sign_confidence >= 0.3 (sign of C1, "
                              "180-degree choice)"},
          {"warning", f.warning()}};
}

}  // namespace qgpu::parallax
