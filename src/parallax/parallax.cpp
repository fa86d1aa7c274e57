// Parallax front end: parameter resolution and validation, the BF-disk groups (plan), dispatch to the dataset's
// backend, the tilt-corrected image, provenance. The alignment loop is alignment.cpp, the fit of the shifts fit.cpp.
#include "parallax/parallax.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "detector/disk_defaults.hpp"
#include "detector/virtual_detector.hpp"
#include "optics/bf_groups.hpp"
#include "optics/probe_optics.hpp"
#include "parallax/parallax_backend.hpp"
#include "parallax/parallax_internal.hpp"
#include "resident/dataset_provenance.hpp"

namespace qgpu::parallax {

namespace detail {

namespace {

void validate(const ParallaxParams& p) {
  const std::string problem = optics::problem(p);
  require(problem.empty(), problem);
  check_settings(p);
}

}  // namespace

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

}  // namespace detail

namespace {

using detail::Run;

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

ParallaxResult run(const Dataset& ds, const ParallaxParams& p) {
  Run r = detail::align_and_fit(ds, p);
  return assemble(ds, p, r, true);
}

ParallaxResult fit_only(const Dataset& ds, const ParallaxParams& p) {
  Run r = detail::align_and_fit(ds, p);
  return assemble(ds, p, r, false);
}

}  // namespace qgpu::parallax
