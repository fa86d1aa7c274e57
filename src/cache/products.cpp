#include "cache/products.hpp"

#include <algorithm>
#include <cmath>
#include <set>

#include "core/number_text.hpp"
#include "detector/virtual_detector.hpp"
#include "dpc/pipeline.hpp"

namespace qgpu::cache {

namespace {

template <class T> Product product(std::string name, std::string group, Image<T> img) {
  Product p;
  p.name = std::move(name);
  p.group = std::move(group);
  p.provenance = img.provenance.to_json();
  p.image = std::move(img);
  return p;
}

nlohmann::json disk_detector(double cr, double cc, double radius) {
  return {{"kind", "disk"}, {"center", {cr, cc}}, {"radius", radius}};
}
nlohmann::json annulus_detector(double cr, double cc, double inner, double outer) {
  return {{"kind", "annulus"}, {"center", {cr, cc}}, {"inner", inner}, {"outer", outer}};
}

}  // namespace

DerivedRadii derive_radii(double radius, double center_row, double center_col, std::size_t det_rows,
                          std::size_t det_cols) {
  DerivedRadii d;
  d.bf = radius;
  d.abf_inner = 0.5 * radius;
  d.abf_outer = radius;
  const double edge = std::min({center_row, center_col, double(det_rows) - 1 - center_row,
                                double(det_cols) - 1 - center_col});
  d.adf_inner = 1.2 * radius;
  d.adf_outer = std::min(3 * radius, edge);
  d.adf_possible = radius > 0 && d.adf_outer > d.adf_inner;
  return d;
}

std::string bf_name(double radius) { return "bf_r" + number_text(radius); }
std::string adf_name(double inner, double outer) { return "adf_" + number_text(inner) + "_" + number_text(outer); }

void check_extra_detectors(const BuildOptions& o) {
  std::set<std::string> names;
  for (double r : o.bf_radii) {
    if (!std::isfinite(r) || r <= 0) throw InvalidArgument("a bright-field radius must be > 0, got " + number_text(r));
    if (!names.insert(bf_name(r)).second)
      throw InvalidArgument("bright-field radius " + number_text(r) + " given twice");
  }
  for (const AdfRange& a : o.adf_ranges) {
    if (!std::isfinite(a.inner) || !std::isfinite(a.outer) || a.inner < 0 || a.outer <= a.inner)
      throw InvalidArgument("an annulus needs 0 <= inner < outer, got " + number_text(a.inner) + ".." +
                            number_text(a.outer));
    if (!names.insert(adf_name(a.inner, a.outer)).second)
      throw InvalidArgument("annulus " + number_text(a.inner) + ".." + number_text(a.outer) + " given twice");
  }
}

// The cache stores the uint64 sums of unsigned counts (signed and float data are served from the loaded dataset).
const std::string kCacheSums = "the product cache (exact uint64 sums)";

ProductSet compute_products(workflow::ScanProducts& src, const BuildOptions& o) {
  check_extra_detectors(o);  // before any work
  auto step = [&](const std::string& s) {
    if (o.on_step) o.on_step(s);
  };
  ProductSet out;
  const Shape4D& s = src.shape();

  step("sum_pattern");
  out.products.push_back(product("sum_pattern", "patterns", src.summed().counts(kCacheSums)));
  step("mean_pattern");
  out.products.push_back(product("mean_pattern", "patterns", src.mean_pattern()));

  step("frame_totals");
  detector::Mask all = detector::from_weights(s.det_rows, s.det_cols,
                                              std::vector<std::uint32_t>(s.det_rows * s.det_cols, 1));
  all.description = {{"kind", "whole detector"}};
  Image<std::uint64_t> totals = src.virtual_image(all, "detector.frame_totals").take_counts(kCacheSums);
  out.products.push_back(product("frame_totals", "scan", std::move(totals)));

  step("geometry");
  const detector::DiskFit fit = src.fit_bf_disk();
  Geometry& g = out.geometry;
  g.disk_center_row = fit.center_row;
  g.disk_center_col = fit.center_col;
  g.disk_radius = fit.radius;
  g.scan_rows = s.scan_rows;
  g.scan_cols = s.scan_cols;
  g.det_rows = s.det_rows;
  g.det_cols = s.det_cols;
  if (src.metadata().contains("calibration")) g.calibration = src.metadata()["calibration"];
  g.provenance = {{"operation", "detector.fit_bf_disk"},
                  {"backend", backend_name(src.backend())},
                  {"method", fit.method},
                  {"confidence", fit.confidence},
                  {"bf_disk_fit", detector::fit_json(fit)},
                  {"calibration_from", "source file metadata (/entry/calibration, ARINA sidecar, NeXus instrument)"},
                  {"version", kVersion}};
  if (src.metadata().contains("calibration_detail")) g.provenance["calibration_detail"] = src.metadata()["calibration_detail"];

  const double cr = fit.center_row, cc = fit.center_col;
  const detector::Center center{cr, cc};
  const DerivedRadii r = derive_radii(fit.radius, cr, cc, s.det_rows, s.det_cols);
  auto add_disk = [&](const std::string& name, double radius) {
    step(name);
    Product p = product(name, "virtual", src.bf(radius, center).take_counts(kCacheSums));
    p.attributes["detector"] = disk_detector(cr, cc, radius);
    out.products.push_back(std::move(p));
  };
  auto add_annulus = [&](const std::string& name, double inner, double outer) {
    step(name);
    Product p = product(name, "virtual", src.adf(inner, outer, center).take_counts(kCacheSums));
    p.attributes["detector"] = annulus_detector(cr, cc, inner, outer);
    out.products.push_back(std::move(p));
  };
  if (fit.radius > 0) {
    add_disk("bf", r.bf);
    add_annulus("abf", r.abf_inner, r.abf_outer);
  } else {
    out.unavailable["bf"] = out.unavailable["abf"] = "the fitted bright-field disk has radius 0";
  }
  if (r.adf_possible)
    add_annulus("adf", r.adf_inner, r.adf_outer);
  else
    out.unavailable["adf"] = "no room for an annulus 1.2R..min(3R, edge) with R = " + number_text(fit.radius) +
                             " around the disk centre (" + number_text(cr) + ", " + number_text(cc) + ")";
  for (double radius : o.bf_radii) add_disk(bf_name(radius), radius);
  for (const AdfRange& a : o.adf_ranges) add_annulus(adf_name(a.inner, a.outer), a.inner, a.outer);

  step("com");
  dpc::ComResult com = src.center_of_mass();
  out.products.push_back(product("com_row", "dpc", com.com_row));
  out.products.push_back(product("com_col", "dpc", com.com_col));

  dpc::PipelineParams pp;
  pp.idpc = true;
  pp.keep_going_without_rotation = true;  // CoM and centred DPC are kept; the rest is listed as unavailable
  pp.on_step = step;                      // "dpc", "rotation", "field", "idpc"
  const dpc::PipelineResult res = src.dpc_pipeline(std::move(com), pp);  // CoM curl, or the parallax shift field
  const dpc::DpcResult& d = res.dpc;
  Product dr = product("dpc_row", "dpc", d.dpc_row), dc = product("dpc_col", "dpc", d.dpc_col);
  for (Product* p : {&dr, &dc}) {
    p->attributes["ref_row"] = d.ref_row;
    p->attributes["ref_col"] = d.ref_col;
  }
  out.products.push_back(std::move(dr));
  out.products.push_back(std::move(dc));
  if (!res.has_field()) {
    for (const char* n : {"rotation", "field_row", "field_col", "idpc"}) out.unavailable[n] = res.rotation_error;
    return out;
  }

  const dpc::RotationResult& rot = *res.calibration;
  Image<double> curl;
  curl.rows = 2;
  curl.cols = rot.curl_by_angle.size() / 2;
  curl.data = rot.curl_by_angle;
  Product rp = product("rotation", "dpc", std::move(curl));
  rp.provenance = rot.provenance.to_json();
  rp.attributes = {{"angle_deg", rot.angle_deg},
                   {"transpose", rot.transpose ? 1.0 : 0.0},
                   {"curl_rms", rot.curl_rms},
                   {"divergence_rms", rot.divergence_rms},
                   {"confidence", rot.confidence},
                   {"decided_by", rot.method}};
  out.products.push_back(std::move(rp));

  const nlohmann::json field_attrs = {{"angle_deg", rot.angle_deg}, {"transpose", rot.transpose ? 1.0 : 0.0}};
  Product frp = product("field_row", "dpc", res.field_row), fcp = product("field_col", "dpc", res.field_col);
  frp.attributes = fcp.attributes = field_attrs;
  out.products.push_back(std::move(frp));
  out.products.push_back(std::move(fcp));

  out.products.push_back(product("idpc", "dpc", *res.idpc));
  return out;
}

}  // namespace qgpu::cache
