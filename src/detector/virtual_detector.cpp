#include "detector/virtual_detector.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "core/error.hpp"
#include "detector/cpu/masked_sum_cpu.hpp"
#include "detector/cuda/masked_sum_cuda.hpp"
#include "detector/encoded/masked_sum_encoded.hpp"
#include "detector/plan.hpp"
#include "resident/dataset_provenance.hpp"

namespace qgpu::detector {

namespace {

Image<std::uint64_t> masked_image(const Dataset& ds, const Mask& mask, const std::string& op) {
  const Shape4D& s = ds.shape();
  if (mask.rows != s.det_rows || mask.cols != s.det_cols)
    throw InvalidArgument("mask is " + std::to_string(mask.rows) + "x" + std::to_string(mask.cols) +
                          " but the detector is " + std::to_string(s.det_rows) + "x" + std::to_string(s.det_cols));
  Image<std::uint64_t> img;
  img.rows = s.scan_rows;
  img.cols = s.scan_cols;
  nlohmann::json params = {{"mask", mask.description}, {"mask_pixels", mask.nonzero()}};
  if (ds.encoded()) {  // both backends: the plan's strategy on the encoded streams
    const SumPlan plan = plan_masked_sum(mask);
    std::string used;
    img.data = encoded_path::masked_sum(ds, plan, &used);
    params["strategy"] = "encoded " + used;
  } else if (ds.backend() == Backend::cuda) {
    const SumPlan plan = plan_masked_sum(mask);
    params["strategy"] = strategy_name(plan.strategy);
    img.data = cuda::masked_sum(ds, plan);
  } else {
    params["strategy"] = "reference: every pixel";
    img.data = cpu::masked_sum(ds, mask);
  }
  img.provenance = dataset_provenance(ds, op, "uint64", {img.rows, img.cols}, std::move(params));
  return img;
}

}  // namespace

Image<std::uint64_t> virtual_image(const Dataset& ds, const Mask& mask) {
  return masked_image(ds, mask, "detector.virtual_image");
}

Image<std::int64_t> virtual_image(const Dataset& ds, const SignedMask& mask) {
  MaskParts parts = split_signed(mask);
  const Shape4D& s = ds.shape();
  Image<std::int64_t> img;
  img.rows = s.scan_rows;
  img.cols = s.scan_cols;
  img.data.assign(s.scan_rows * s.scan_cols, 0);
  nlohmann::json params = {{"mask", {{"kind", "signed integer"}}}, {"method", "sum(w+ x frame) - sum(w- x frame)"}};
  const auto add = [&](std::vector<std::uint32_t>& w, std::int64_t sign, const char* name) {
    if (std::all_of(w.begin(), w.end(), [](std::uint32_t v) { return v == 0; })) return;
    const Image<std::uint64_t> part = masked_image(ds, from_weights(parts.rows, parts.cols, std::move(w)), name);
    for (std::size_t i = 0; i < part.data.size(); ++i) {
      if (part.data[i] > std::uint64_t(INT64_MAX))
        throw InvalidArgument(std::string("virtual image: the ") + name + " weights' sum " +
                              std::to_string(part.data[i]) + " exceeds the int64 range");
      img.data[i] += sign * std::int64_t(part.data[i]);  // |each part| <= INT64_MAX: the difference fits
    }
    params[name] = part.provenance.parameters;
  };
  add(parts.positive, 1, "positive");
  add(parts.negative, -1, "negative");
  img.provenance = dataset_provenance(ds, "detector.virtual_image", "int64", {img.rows, img.cols}, std::move(params));
  return img;
}

Image<std::uint64_t> bf(const Dataset& ds, std::optional<double> radius, std::optional<Center> center) {
  const Shape4D& s = ds.shape();
  const DiskFit d = disk_with_overrides(center, radius, [&] { return fit_bf_disk(ds); });
  Image<std::uint64_t> img =
      masked_image(ds, disk(s.det_rows, s.det_cols, d.center_row, d.center_col, d.radius), "detector.bf");
  if (!(radius && center)) img.provenance.parameters["bf_disk_fit"] = fit_json(d);
  return img;
}

Image<std::uint64_t> adf(const Dataset& ds, double inner, double outer, std::optional<Center> center) {
  const Shape4D& s = ds.shape();
  std::optional<DiskFit> fit;
  if (!center) fit = fit_bf_disk(ds);
  const Center c = center ? *center : Center{fit->center_row, fit->center_col};
  Image<std::uint64_t> img =
      masked_image(ds, annulus(s.det_rows, s.det_cols, c.first, c.second, inner, outer), "detector.adf");
  if (fit) img.provenance.parameters["bf_disk_fit"] = fit_json(*fit);
  return img;
}

Image<std::uint64_t> df(const Dataset& ds, Center center, double radius) {
  const Shape4D& s = ds.shape();
  return masked_image(ds, disk(s.det_rows, s.det_cols, center.first, center.second, radius), "detector.df");
}

Image<std::uint64_t> sum_pattern(const Dataset& ds) {
  const Shape4D& s = ds.shape();
  Image<std::uint64_t> img;
  img.rows = s.det_rows;
  img.cols = s.det_cols;
  img.data = ds.encoded()                    ? encoded_path::sum_pattern(ds)  // stored while encoding
             : ds.backend() == Backend::cuda ? cuda::sum_pattern(ds)
                                             : cpu::sum_pattern(ds);
  img.provenance = dataset_provenance(ds, "detector.sum_pattern", "uint64", {img.rows, img.cols});
  return img;
}

Image<std::uint64_t> max_pattern(const Dataset& ds) {
  const Shape4D& s = ds.shape();
  Image<std::uint64_t> img;
  img.rows = s.det_rows;
  img.cols = s.det_cols;
  img.data = ds.encoded()                    ? encoded_path::max_pattern(ds)
             : ds.backend() == Backend::cuda ? cuda::max_pattern(ds)
                                             : cpu::max_pattern(ds);
  img.provenance = dataset_provenance(ds, "detector.max_pattern", "uint64", {img.rows, img.cols});
  return img;
}

Image<float> mean_pattern(const Dataset& ds) { return mean_from_sum(sum_pattern(ds), ds.shape().frames()); }

Image<float> mean_from_sum(const Image<std::uint64_t>& sum, std::size_t frames) {
  Image<float> img;
  img.rows = sum.rows;
  img.cols = sum.cols;
  img.data.resize(sum.data.size());
  const double n = double(frames);
  for (std::size_t i = 0; i < sum.data.size(); ++i) img.data[i] = float(double(sum.data[i]) / n);
  img.provenance = sum.provenance;
  img.provenance.operation = "detector.mean_pattern";
  img.provenance.output_dtype = "float32";
  return img;
}

DiskFit fit_bf_disk(const Dataset& ds) {
  if (auto c = ds.cached("bf_disk_fit")) return *static_cast<DiskFit*>(c.get());
  auto fit = std::make_shared<DiskFit>(fit_bf_disk(sum_pattern(ds)));
  ds.set_cached("bf_disk_fit", fit);
  return *fit;
}

AnnulusRadii default_adf_radii(const Dataset& ds, std::optional<Center> center, std::optional<double> radius) {
  const Shape4D& s = ds.shape();
  DiskFit disk;
  if (!center || !radius) disk = fit_bf_disk(ds);
  if (radius) disk.radius = *radius;
  return default_adf_radii(disk, s.det_rows, s.det_cols, center);
}

AnnulusRadii default_adf_radii(const DiskFit& fit, std::size_t det_rows, std::size_t det_cols,
                               std::optional<Center> center) {
  const Center c = center ? *center : Center{fit.center_row, fit.center_col};
  const double edge = std::min({c.first, double(det_rows) - 1 - c.first, c.second, double(det_cols) - 1 - c.second});
  AnnulusRadii r{1.2 * fit.radius, std::min(3.0 * fit.radius, edge)};
  if (!(r.outer > r.inner))
    throw InvalidArgument("no room for a dark-field ring: the BF disk (radius " + std::to_string(fit.radius) +
                          " px) reaches the detector edge " + std::to_string(edge) + " px from the centre; give "
                          "the ADF radii explicitly");
  return r;
}

}  // namespace qgpu::detector
