// SSB front end: parameter validation, the K set (plan), dispatch to the dataset's backend, provenance.
#include "ssb/ssb.hpp"

#include <cmath>
#include <string>

#include "core/numbers.hpp"
#include "core/error.hpp"
#include "core/stage_timing.hpp"
#include "detector/disk_defaults.hpp"
#include "detector/virtual_detector.hpp"
#include "optics/bf_groups.hpp"
#include "optics/probe_optics.hpp"
#include "resident/dataset_provenance.hpp"
#include "resident/scan_bin.hpp"
#include "ssb/ssb_backend.hpp"
#include "ssb/ssb_internal.hpp"
#include "ssb/ssb_math.hpp"
#include "ssb/ssb_weighting.hpp"

namespace qgpu::ssb {

namespace detail {

double Plan::qy(std::size_t i) const { return double(signed_frequency(i, scan_rows)) / (double(scan_rows) * step); }
double Plan::qx(std::size_t j) const { return double(signed_frequency(j, scan_cols)) / (double(scan_cols) * step); }

double weight_floor(const Plan& plan) { return kWeightFloor * plan.total_weight(); }

namespace {

void require(bool ok, const std::string& what) {
  if (!ok) throw InvalidArgument("ssb: " + what);
}

bool finite(const Aberrations& a) {
  for (double v : {a.C1, a.A1, a.A1_angle, a.B2, a.B2_angle, a.A2, a.A2_angle, a.C3})
    if (!std::isfinite(v)) return false;
  return true;
}

}  // namespace

void validate_params(const SsbParams& p) {
  const std::string problem = optics::problem(p);
  require(problem.empty(), problem);
  require(std::isfinite(p.rotation_deg), "rotation_deg must be finite");
  require(finite(p.aberrations), "aberrations must be finite");
}

Plan make_plan(const Dataset& ds, const SsbParams& p, std::size_t bin, nlohmann::json& resolved) {
  validate_params(p);
  require(bin >= 1, "detector_bin must be >= 1");
  const Shape4D& sh = ds.shape();
  require(sh.scan_rows >= 2 && sh.scan_cols >= 2, "the scan must be at least 2x2");
  require(sh.det_rows >= 2 && sh.det_cols >= 2, "the detector must be at least 2x2");
  require(sh.frame_pixels() < (std::size_t(1) << 32) && sh.scan_rows < (std::size_t(1) << 30) &&
              sh.scan_cols < (std::size_t(1) << 30),
          "dataset too large");

  // Disk centre and pixel size: given, or from the BF disk fit (only computed when needed).
  const detector::DiskDefaults disk(ds, p.disk_center, p.disk_radius);
  const double cr = disk.center_row();
  const double cc = disk.center_col();
  if (!(p.detector_mrad_per_pixel > 0)) require(disk.radius() > 0, "the fitted BF disk has zero radius");
  const auto [mrad, mrad_source] = disk.sampling(p.detector_mrad_per_pixel, p.semiangle_mrad);

  Plan plan;
  plan.scan_rows = sh.scan_rows;
  plan.scan_cols = sh.scan_cols;
  plan.step = p.scan_step_angstrom;
  plan.lambda = wavelength_angstrom(p.energy_kev);
  plan.kmax = p.semiangle_mrad * 1e-3 / plan.lambda;
  plan.kmax2 = plan.kmax * plan.kmax * (1 + kApertureSlack);
  const double dk = mrad * 1e-3 / plan.lambda;  // 1/angstrom per detector pixel
  const double radius_px = plan.kmax / dk;
  require(cr >= 0 && cc >= 0 && cr <= double(sh.det_rows - 1) && cc <= double(sh.det_cols - 1),
          "disk centre (" + std::to_string(cr) + ", " + std::to_string(cc) + ") is outside the detector");
  require(cr - radius_px >= -0.5 && cc - radius_px >= -0.5 && cr + radius_px <= double(sh.det_rows) - 0.5 &&
              cc + radius_px <= double(sh.det_cols) - 0.5,
          "BF disk (centre " + std::to_string(cr) + ", " + std::to_string(cc) + ", radius " +
              std::to_string(radius_px) + " px) does not fit on the " + std::to_string(sh.det_rows) + "x" +
              std::to_string(sh.det_cols) + " detector");

  // Pixels inside the aperture, grouped into bin x bin blocks (aligned to the detector origin), raster order.
  const double t = p.rotation_deg * kPi / 180.0, ct = std::cos(t), st = std::sin(t);
  std::vector<std::uint32_t> inside;
  for (std::size_t r = 0; r < sh.det_rows; ++r)
    for (std::size_t c = 0; c < sh.det_cols; ++c) {
      const double ky = (double(r) - cr) * dk, kx = (double(c) - cc) * dk;
      if (ky * ky + kx * kx <= plan.kmax2) inside.push_back(std::uint32_t(r * sh.det_cols + c));
    }
  const std::vector<std::vector<std::uint32_t>> blocks = optics::group_pixels(inside, sh.det_cols, bin);
  require(!blocks.empty(), "no detector pixel inside the BF disk");
  plan.offsets.push_back(0);
  for (const std::vector<std::uint32_t>& pix : blocks) {
    double sy = 0, sx = 0;
    for (std::uint32_t q : pix) {
      const double ky = (double(q / sh.det_cols) - cr) * dk, kx = (double(q % sh.det_cols) - cc) * dk;
      const double dy = p.transpose ? kx : ky, dx = p.transpose ? ky : kx;  // detector -> scan frame, see ssb.hpp
      sy += ct * dy - st * dx;
      sx += st * dy + ct * dx;
      plan.pixels.push_back(q);
    }
    plan.ky.push_back(sy / double(pix.size()));
    plan.kx.push_back(sx / double(pix.size()));
    plan.weight.push_back(double(pix.size()));
    plan.offsets.push_back(std::uint32_t(plan.pixels.size()));
  }

  resolved = {{"wavelength_angstrom", plan.lambda},
              {"kmax_per_angstrom", plan.kmax},
              {"detector_mrad_per_pixel", mrad},
              {"detector_mrad_per_pixel_source", mrad_source},
              {"disk_center", {cr, cc}},
              {"disk_center_source", disk.center_source()},
              {"disk_radius_px", radius_px},
              {"detector_bin", bin},
              {"bf_pixels", plan.pixels.size()},
              {"k_groups", plan.groups()},
              {"q_spacing_per_angstrom",
               {1.0 / (double(sh.scan_rows) * plan.step), 1.0 / (double(sh.scan_cols) * plan.step)}}};
  resolved.update(disk.provenance());  // the fit's confidence when it was used
  return plan;
}

std::unique_ptr<Engine> make_engine(const Dataset& ds, const Plan& plan) {
  if (ds.backend() == Backend::vulkan) return make_vulkan_engine(ds, plan);
  return ds.backend() == Backend::cuda ? make_cuda_engine(ds, plan) : make_cpu_engine(ds, plan);
}

nlohmann::json aberrations_json(const Aberrations& a) {
  return {{"C1", a.C1}, {"A1", a.A1}, {"A1_angle", a.A1_angle}, {"B2", a.B2}, {"B2_angle", a.B2_angle},
          {"A2", a.A2}, {"A2_angle", a.A2_angle}, {"C3", a.C3}};
}

Provenance provenance_for(const Dataset& ds, const SsbParams& p, const std::string& op, nlohmann::json resolved) {
  Provenance pv = dataset_provenance(ds, op, dtype_name(DType::f32), {ds.shape().scan_rows, ds.shape().scan_cols},
                                     std::move(resolved));
  if (ds.encoded()) pv.parameters["bf_gather"] = "encoded: the BF-disk pixels' streams decoded pixel-major";
  pv.parameters["energy_kev"] = p.energy_kev;
  pv.parameters["semiangle_mrad"] = p.semiangle_mrad;
  pv.parameters["scan_step_angstrom"] = p.scan_step_angstrom;
  pv.parameters["rotation_deg"] = p.rotation_deg;
  pv.parameters["transpose"] = p.transpose;
  pv.parameters["rotation_convention"] = "(row, col): transpose first, then (r, c) -> (cos t r - sin t c, sin t r + cos t c)"
                                         " (as dpc::rotate_field; docs/conventions.md)";
  pv.parameters["aberrations"] = aberrations_json(p.aberrations);
  if (!p.sources.empty()) pv.parameters["calibration_sources"] = p.sources;
  pv.parameters["chi"] = "Krivanek: 2pi/lambda [C1 w^2/2 + A1 w^2/2 cos2(phi-a) + B2 w^3/3 cos(phi-b) + "
                         "A2 w^3/3 cos3(phi-c) + C3 w^4/4], w = lambda |k|";
  pv.parameters["gamma"] = "A*(K)A(K-Q) - A(K)A*(K+Q), A = aperture exp(-i chi)";
  return pv;
}

namespace {

// The plan and engine of one (dataset, parameters, bin); images at any aberrations.
struct Prepared {
  Dataset ds;
  SsbParams p;
  std::size_t bin;
  std::string op;
  nlohmann::json resolved;
  Plan plan;
  std::unique_ptr<Engine> engine;
  Weighting weighting = Weighting::amplitude;  // resolved once (auto: by the counts per frame)

  Prepared(const Dataset& d, const SsbParams& params, std::size_t b, std::string operation)
      : ds(d), p(params), bin(b), op(std::move(operation)) {
    const timing::Stage stage("prepare");  // the K set and G(K, Q): once per Reconstructor
    plan = make_plan(ds, p, bin, resolved);
    engine = make_engine(ds, plan);
    const double bf_counts = engine->mean_counts() * plan.total_weight();
    std::string reason;
    weighting = resolve_weighting(p.weighting, bf_counts, reason);
    resolved["mean_counts_per_bf_pixel"] = engine->mean_counts();
    resolved["bf_counts_per_frame"] = bf_counts;
    resolved["weighting"] = weighting_name(weighting);
    resolved["weighting_requested"] = weighting_name(p.weighting);
    resolved["weighting_reason"] = reason;
    resolved["auto_wiener_below_counts_per_frame"] = kAutoWienerBelowCounts;
    if (weighting == Weighting::amplitude) {
      resolved["weight_floor"] = weight_floor(plan);
      resolved["normalisation"] = "Psi = sum G conj(Gamma) / (I0 N max(sum w|Gamma|^2, floor)); Psi(0) = 0; "
                                  "Nyquist row/col = 0; object = 1 + IFFT(Psi)";
    } else if (weighting == Weighting::phase) {
      resolved["normalisation"] = "Psi = sum_{|Gamma| > 1e-3} G conj(Gamma) / |Gamma| / (I0 N sum w) (py4DSTEM "
                                  "Gamma/|Gamma|); Psi(0) = 0; Nyquist row/col = 0; object = 1 + IFFT(Psi)";
    } else {
      resolved["wiener_ring_width_spacings"] = kWienerShellWidth;
      resolved["normalisation"] = "Psi = sum G conj(Gamma) / (I0 N (sum w|Gamma|^2 + 1 / (I0 N S_ring))), S_ring = "
                                  "sum(|num|^2 - N I0 den) / sum(I0 N den)^2 per |Q| ring, Psi = 0 where S_ring <= 0; "
                                  "Psi(0) = 0; Nyquist row/col = 0; object = 1 + IFFT(Psi)";
    }
    resolved["engine"] = engine->describe();
  }

  SsbResult at(const Aberrations& ab, std::size_t scan_bin = 1) {
    SsbParams q = p;
    q.aberrations = ab;
    validate_params(q);
    check_scan_bin(plan.scan_rows, plan.scan_cols, scan_bin);
    ObjectImages obj;
    {
      const timing::Stage stage("compute");  // the backend claims its transfers
      obj = engine->reconstruct(ab, weighting, scan_bin);
    }
    SsbResult r;
    r.provenance = provenance_for(ds, q, op, resolved);
    if (scan_bin > 1) {
      r.provenance.output_shape = {plan.scan_rows / scan_bin, plan.scan_cols / scan_bin};
      r.provenance.parameters["scan_bin"] = scan_bin;
      r.provenance.parameters["scan_binning"] =
          "low-pass: the spectrum at the binned grid's frequencies, inverted on it (every scan_bin-th position)";
    }
    auto image = [&](std::vector<float> v, const char* component) {
      Image<float> im;
      im.rows = plan.scan_rows / scan_bin;
      im.cols = plan.scan_cols / scan_bin;
      im.data = std::move(v);
      im.provenance = r.provenance;
      im.provenance.parameters["component"] = component;
      return im;
    };
    r.phase = image(std::move(obj.phase), "phase");
    r.amplitude = image(std::move(obj.amplitude), "amplitude");
    return r;
  }
};

SsbResult run(const Dataset& ds, const SsbParams& p, std::size_t bin, const std::string& op) {
  return Prepared(ds, p, bin, op).at(p.aberrations);
}

}  // namespace

}  // namespace detail

SsbResult reconstruct(const Dataset& ds, const SsbParams& p) { return detail::run(ds, p, 1, "ssb.reconstruct"); }

struct Reconstructor::Impl {
  detail::Prepared prepared;
};

Reconstructor::Reconstructor(const Dataset& ds, const SsbParams& p, std::size_t detector_bin) {
  if (detector_bin == 0) throw InvalidArgument("ssb: detector_bin must be >= 1");
  impl_ = std::make_unique<Impl>(Impl{detail::Prepared(ds, p, detector_bin, detector_bin == 1 ? "ssb.reconstruct" : "ssb.preview")});
}
Reconstructor::~Reconstructor() = default;
SsbResult Reconstructor::at(const Aberrations& ab, std::size_t scan_bin) { return impl_->prepared.at(ab, scan_bin); }
std::size_t Reconstructor::detector_bin() const { return impl_->prepared.bin; }
const SsbParams& Reconstructor::params() const { return impl_->prepared.p; }

SsbResult preview(const Dataset& ds, const SsbParams& p, std::size_t detector_bin) {
  if (detector_bin == 0) throw InvalidArgument("ssb: detector_bin must be >= 1");
  return detail::run(ds, p, detector_bin, "ssb.preview");
}

}  // namespace qgpu::ssb
