// Parallax front end: parameter validation, the BF-disk groups (plan), the alignment loop on the dataset's backend,
// the linear fit of the shifts (defocus, astigmatism, rotation, transpose), the tilt-corrected image, provenance.
#include "parallax/parallax.hpp"

#include <fftw3.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <complex>
#include <limits>
#include <map>
#include <mutex>
#include <string>

#include "core/numbers.hpp"
#include "core/error.hpp"
#include "core/fftw_planner.hpp"
#include "detector/disk_defaults.hpp"
#include "detector/virtual_detector.hpp"
#include "optics/bf_groups.hpp"
#include "optics/probe_optics.hpp"
#include "parallax/parallax_backend.hpp"
#include "resident/dataset_provenance.hpp"

namespace qgpu::parallax {

namespace {

constexpr double kStages[] = {0.3, 0.55, 0.8, 1.0};  // fractions of the largest group offset, see align_and_fit
constexpr double kSidebandMinConfidence = 0.5;       // see sideband_for

void require(bool ok, const std::string& what) {
  if (!ok) throw InvalidArgument("parallax: " + what);
}

void validate(const ParallaxParams& p) {
  const std::string problem = optics::problem(p);
  require(problem.empty(), problem);
  check_settings(p);
}

struct Geometry {
  double center_row = 0, center_col = 0, radius_px = 0, mrad_per_px = 0, lambda = 0;
  std::size_t bin = 1;
  double counts_per_pixel = -1;  // mean counts per BF pixel per frame (auto binning); -1: bin given
  std::string mrad_source, center_source, radius_source;
  nlohmann::json disk_fit;  // DiskDefaults::provenance(): the fit's confidence when it was used
};

detail::Plan make_plan(const Dataset& ds, const ParallaxParams& p, Geometry& geo) {
  validate(p);
  const Shape4D& sh = ds.shape();
  require(sh.scan_rows >= 4 && sh.scan_cols >= 4, "the scan must be at least 4x4");
  require(sh.det_rows >= 2 && sh.det_cols >= 2, "the detector must be at least 2x2");
  require(sh.frame_pixels() < (std::size_t(1) << 32) && sh.scan_rows < (std::size_t(1) << 20) &&
              sh.scan_cols < (std::size_t(1) << 20),
          "dataset too large");
  const detector::DiskDefaults disk(ds, p.disk_center, p.disk_radius);
  geo.center_row = disk.center_row();
  geo.center_col = disk.center_col();
  geo.center_source = disk.center_source();
  geo.radius_source = disk.radius_source();
  geo.radius_px = disk.radius();
  require(geo.radius_px > 0, "the BF disk has zero radius");
  const detector::DiskDefaults::Sampling sampling = disk.sampling(p.detector_mrad_per_pixel, p.semiangle_mrad);
  geo.mrad_per_px = sampling.mrad_per_pixel;
  geo.mrad_source = sampling.source;
  geo.disk_fit = disk.provenance();
  geo.lambda = optics::wavelength_angstrom(p.energy_kev);
  const double r_use = geo.radius_px - p.edge_px;
  require(r_use > 0, "no BF-disk pixels left after edge_px");

  std::vector<std::uint32_t> inside;
  for (std::size_t r = 0; r < sh.det_rows; ++r)
    for (std::size_t c = 0; c < sh.det_cols; ++c) {
      const double dr = double(r) - geo.center_row, dc = double(c) - geo.center_col;
      if (dr * dr + dc * dc <= r_use * r_use) inside.push_back(std::uint32_t(r * sh.det_cols + c));
    }
  require(inside.size() >= 3, "fewer than 3 detector pixels inside the BF disk");

  // bin x bin groups on the whole detector's grid (a crop passes its origin: ParallaxParams::detector_origin)
  auto group = [&](std::size_t bin) { return optics::group_pixels(inside, sh.det_cols, bin, p.detector_origin); };
  std::size_t bin = p.detector_bin ? p.detector_bin : 1;
  auto blocks = group(bin);
  if (p.detector_bin == 0) {
    // Mean counts per BF pixel per frame, from the summed pattern (stored for an encoded resident).
    double counts = 0;
    detector::sum_pattern(ds).visit([&](const auto& sum) {
      for (std::uint32_t q : inside) counts += double(sum.data[q]);
    });
    const double per_px = counts / (double(inside.size()) * double(sh.frames()));
    while (double(bin * bin) * per_px < kAutoMinGroupCounts) {
      auto coarser = group(bin + 1);
      if (coarser.size() < kAutoMinGroups) break;
      blocks = std::move(coarser);
      ++bin;
    }
    geo.counts_per_pixel = per_px;
  }
  while (p.detector_bin == 0 && blocks.size() > kAutoMaxGroups) blocks = group(++bin);
  require(blocks.size() >= 3, "fewer than 3 pixel groups in the BF disk (detector_bin too large)");
  geo.bin = bin;

  detail::Plan plan;
  plan.scan_rows = sh.scan_rows;
  plan.scan_cols = sh.scan_cols;
  plan.window = detail::edge_window(sh.scan_rows, sh.scan_cols);
  plan.offsets.push_back(0);
  for (const std::vector<std::uint32_t>& pix : blocks) {
    double sr = 0, sc = 0;
    for (std::uint32_t q : pix) {
      sr += double(q / sh.det_cols) - geo.center_row;
      sc += double(q % sh.det_cols) - geo.center_col;
      plan.pixels.push_back(q);
    }
    plan.det_row.push_back(sr / double(pix.size()));
    plan.det_col.push_back(sc / double(pix.size()));
    plan.offsets.push_back(std::uint32_t(plan.pixels.size()));
  }
  return plan;
}

std::unique_ptr<detail::Engine> make_engine(const Dataset& ds, const detail::Plan& plan) {
  if (ds.backend() == Backend::vulkan) not_implemented_on(Backend::vulkan, "parallax");
  return ds.backend() == Backend::cuda ? detail::make_cuda_engine(ds, plan) : detail::make_cpu_engine(ds, plan);
}

void residuals(const detail::Plan& plan, const std::vector<detail::Shift>& s, const std::vector<bool>& use,
               const double m[4], const double b[2], double& residual_rms, double& model_rms);

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

// Polar decomposition of the shift matrix m (any units): m T^transpose = P R(phi), P symmetric (up to its sign the
// aberration matrix S of parallax.hpp), transpose = det m < 0.
struct Polar {
  bool transpose = false;
  double phi = 0, p00 = 0, p01 = 0, p11 = 0;
};
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

struct Run {
  detail::Plan plan;
  Geometry geo;
  std::unique_ptr<detail::Engine> engine;
  std::vector<detail::Shift> measured, fitted;
  std::vector<float> bf;
  ParallaxFit fit;
};

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
  return run;
}

Provenance provenance_for(const Dataset& ds, const ParallaxParams& p, const Run& run, const std::string& op) {
  Provenance pv = dataset_provenance(ds, op, dtype_name(DType::f32),
                                     {ds.shape().scan_rows * p.upsample, ds.shape().scan_cols * p.upsample});
  nlohmann::json& q = pv.parameters;
  q["energy_kev"] = p.energy_kev;
  if (!p.sources.empty()) q["calibration_sources"] = p.sources;
  q["semiangle_mrad"] = p.semiangle_mrad;
  q["scan_step_angstrom"] = p.scan_step_angstrom;
  q["wavelength_angstrom"] = run.geo.lambda;
  q["detector_mrad_per_pixel"] = run.geo.mrad_per_px;
  q["detector_mrad_per_pixel_source"] = run.geo.mrad_source;
  q["disk_center"] = {run.geo.center_row, run.geo.center_col};
  q["disk_center_source"] = run.geo.center_source;
  q["disk_radius_px"] = run.geo.radius_px;
  q["disk_radius_source"] = run.geo.radius_source;
  q.update(run.geo.disk_fit);
  q["edge_px"] = p.edge_px;
  q["detector_bin"] = run.geo.bin;
  q["detector_bin_source"] = p.detector_bin ? "given" : "auto";
  if (run.geo.counts_per_pixel >= 0) q["counts_per_bf_pixel_per_frame"] = run.geo.counts_per_pixel;
  q["bf_pixels"] = run.plan.pixels.size();
  q["groups"] = run.plan.groups();
  q["iterations"] = p.iterations;
  q["search_px"] = p.search_px;
  q["stages"] = "disc fractions 0.3, 0.55, 0.8, 1.0 of the largest group offset, then iterations - 1 more at 1.0";
  q["upsample"] = p.upsample;
  q["shifts_used"] = p.use_fitted_shifts ? "linear fit" : "measured";
  q["c1_sign_hint"] = p.c1_sign_hint;
  q["fit"] = fit_json(run.fit);
  q["engine"] = run.engine->describe();
  if (ds.encoded()) q["bf_gather"] = "encoded: only the BF-disk pixels' streams decoded";
  return pv;
}

ParallaxResult assemble(const Dataset& ds, const ParallaxParams& p, Run& run, bool with_image) {
  ParallaxResult r;
  r.fit = run.fit;
  for (std::size_t g = 0; g < run.plan.groups(); ++g) {
    r.det_row.push_back(run.plan.det_row[g]);
    r.det_col.push_back(run.plan.det_col[g]);
    r.shift_row.push_back(run.measured[g].row);
    r.shift_col.push_back(run.measured[g].col);
  }
  r.provenance = provenance_for(ds, p, run, with_image ? "parallax.run" : "parallax.fit");
  r.bf.rows = run.plan.scan_rows;
  r.bf.cols = run.plan.scan_cols;
  r.bf.data = run.bf;
  r.bf.provenance = r.provenance;
  r.bf.provenance.output_shape = {r.bf.rows, r.bf.cols};
  r.bf.provenance.parameters["component"] = "bf (mean of the virtual images, no shifts)";
  if (with_image) {
    r.image.rows = run.plan.scan_rows * p.upsample;
    r.image.cols = run.plan.scan_cols * p.upsample;
    r.image.data = run.engine->upsampled_sum(p.use_fitted_shifts ? run.fitted : run.measured, p.upsample);
    r.image.provenance = r.provenance;
    r.image.provenance.parameters["component"] = "tilt-corrected bright field";
  }
  return r;
}

}  // namespace

void check_settings(const ParallaxParams& p, const optics::Namer& name_of) {
  const auto n = [&](const char* field) { return name_of ? name_of(field) : std::string("parallax: ") + field; };
  const auto check = [](bool ok, const std::string& what) {
    if (!ok) throw InvalidArgument(what);
  };
  check(std::isfinite(p.edge_px), n("edge_px") + " must be a finite number");
  check(p.edge_px >= 0, n("edge_px") + " must be >= 0");
  check(p.detector_bin <= 64, n("detector_bin") + " must be <= 64 (0: auto)");
  check(p.upsample >= 1 && p.upsample <= 8, n("upsample") + " must be in 1..8");
  check(p.iterations >= 1 && p.iterations <= 20, n("iterations") + " must be in 1..20");
  check(p.search_px >= 1 && p.search_px <= 64, n("search_px") + " must be in 1..64");
  check(std::isfinite(p.c1_sign_hint), n("c1_sign_hint") + " must be a finite number");
}

namespace {

ParallaxParams from_optics(optics::ProbeOptics o) {
  o.sources.erase("rotation_deg");  // parallax fits the rotation: only the values it uses are listed
  ParallaxParams p;
  static_cast<optics::ProbeOptics&>(p) = std::move(o);
  const double c1 = p.aberrations.C1;
  p.c1_sign_hint = c1 > 0 ? 1 : (c1 < 0 ? -1 : 0);
  return p;
}

}  // namespace

ParallaxParams resolve_params(const nlohmann::json& md, const optics::Overrides& o, const optics::Namer& name_of) {
  return from_optics(optics::resolve(md, o, "parallax", optics::Missing::refuse, name_of));
}

ParallaxParams params_from_metadata(const Dataset& ds) {
  return from_optics(optics::resolve(ds.metadata(), {}, "parallax", optics::Missing::leave));
}

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

ParallaxResult run(const Dataset& ds, const ParallaxParams& p) {
  Run r = align_and_fit(ds, p);
  return assemble(ds, p, r, true);
}

ParallaxResult fit_only(const Dataset& ds, const ParallaxParams& p) {
  Run r = align_and_fit(ds, p);
  return assemble(ds, p, r, false);
}

}  // namespace qgpu::parallax
