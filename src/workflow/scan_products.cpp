#include "workflow/scan_products.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace qgpu::workflow {

const SumImage& ScanProducts::summed() {
  if (!sum_) sum_ = sum_pattern();
  return *sum_;
}

Image<float> ScanProducts::mean_pattern() { return detector::mean_from_sum(summed(), shape().frames()); }

detector::DiskFit ScanProducts::fit_bf_disk() {
  if (!fit_) fit_ = detector::fit_bf_disk(summed());
  return *fit_;
}

void ScanProducts::set_disk(std::optional<detector::Center> center, std::optional<double> radius) {
  given_center_ = center;
  given_radius_ = radius;
}

detector::DiskFit ScanProducts::disk() {
  return detector::disk_with_overrides(given_center_, given_radius_, [this] { return fit_bf_disk(); });
}

detector::AnnulusRadii ScanProducts::default_adf_radii(std::optional<detector::Center> center) {
  return detector::default_adf_radii(disk(), shape().det_rows, shape().det_cols, center);
}

detector::Center ScanProducts::center_or_fit(std::optional<detector::Center> center) {
  if (center) return *center;
  const detector::DiskFit d = disk();
  return {d.center_row, d.center_col};
}

SumImage ScanProducts::bf_with_defaults(std::optional<double> radius, std::optional<detector::Center> center) {
  if (radius && center) return bf(*radius, *center);
  return bf(radius ? *radius : disk().radius, center_or_fit(center));
}

dpc::PipelineResult ScanProducts::dpc_pipeline(dpc::ComResult com, const dpc::PipelineParams& params) {
  return dpc::run_pipeline(std::move(com), params, [this](const dpc::DpcResult& d) { return calibrate_rotation(d); });
}

std::string DatasetProducts::summary() const {
  const Shape4D& s = ds_.shape();
  char buf[256];
  const char* verb = ds_.provenance().operation == "live.acquire" ? "received" : "loaded";
  std::snprintf(buf, sizeof buf, "%s %zux%zux%zux%zu %s on %s (%s)", verb, s.scan_rows, s.scan_cols, s.det_rows,
                s.det_cols, dtype_name(ds_.dtype()).c_str(), backend_name(ds_.backend()).c_str(),
                ds_.residency().c_str());
  std::string out = buf;
  // What the reader or the load said (an interrupted scan cut to whole rows, NaN/inf values set to 0, ...).
  const nlohmann::json& md = ds_.metadata();
  if (md.contains("file") && md["file"].contains("warnings"))
    for (const auto& w : md["file"]["warnings"]) out += "\nqgpu: warning: " + w.get<std::string>();
  return out;
}

SumImage DatasetProducts::virtual_image(const detector::Mask& mask, const std::string& operation) {
  SumImage img = detector::virtual_image(ds_, mask);
  img.provenance().operation = operation;
  return img;
}

Region bf_disk_box(const detector::DiskFit& fit, double radius, std::size_t det_rows, std::size_t det_cols,
                   std::size_t align) {
  const double reach = radius * 1.01 + 2;  // the aperture tests' slack is far smaller
  align = std::max<std::size_t>(align, 1);
  const auto low = [&](double c) { return (std::size_t(std::max(0.0, std::floor(c - reach))) / align) * align; };
  const auto high = [&](double c, std::size_t n) {
    return std::min<std::size_t>(n, std::size_t(std::max(0.0, std::ceil(c + reach))) + 1);
  };
  Region box;
  box.row0 = low(fit.center_row);
  box.col0 = low(fit.center_col);
  box.rows = high(fit.center_row, det_rows) - box.row0;
  box.cols = high(fit.center_col, det_cols) - box.col0;
  return box;
}

Dataset crop_like(const Dataset& from, HostArray4D frames, const Region& r, const nlohmann::json& note) {
  Provenance p = from.provenance();
  p.parameters["detector_crop"] = {{"row0", r.row0}, {"col0", r.col0}, {"rows", r.rows}, {"cols", r.cols}};
  for (const auto& [k, v] : note.items()) p.parameters[k] = v;
  Dataset d = Dataset::from_host(std::move(frames), from.metadata(), std::move(p));
  return from.backend() == Backend::cuda ? d.to_device() : d;
}

Dataset DatasetProducts::detector_crop(const Region& r) { return crop_like(ds_, ds_.read({}, r), r); }

}  // namespace qgpu::workflow
