#include "detector/virtual_detector.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <type_traits>

#include "core/error.hpp"
#include "core/stage_timing.hpp"
#include "detector/cpu/masked_sum_cpu.hpp"
#include "detector/cuda/masked_sum_cuda.hpp"
#include "detector/encoded/masked_sum_encoded.hpp"
#include "detector/plan.hpp"
#include "detector/vulkan/sums_vulkan.hpp"
#include "resident/dataset_provenance.hpp"
#include "resident/encoded/encoded_resident.hpp"
#include "resident/scan_bin.hpp"

namespace qgpu::detector {

namespace {

// Shape and provenance of a backend's values.
SumImage finish(SumImage out, const Dataset& ds, const std::string& op, std::size_t rows, std::size_t cols,
                nlohmann::json params = nlohmann::json::object()) {
  const std::string dtype = dtype_name(out.dtype());
  out.visit([&](auto& img) {
    img.rows = rows;
    img.cols = cols;
    img.provenance = dataset_provenance(ds, op, dtype, {rows, cols}, std::move(params));
  });
  return out;
}

SumImage masked_image(const Dataset& ds, const Mask& mask, const std::string& op, std::size_t scan_bin) {
  const Shape4D& s = ds.shape();
  if (mask.rows != s.det_rows || mask.cols != s.det_cols)
    throw InvalidArgument("mask is " + std::to_string(mask.rows) + "x" + std::to_string(mask.cols) +
                          " but the detector is " + std::to_string(s.det_rows) + "x" + std::to_string(s.det_cols));
  check_scan_bin(s, scan_bin);
  SumImage out;
  nlohmann::json params = {{"mask", mask.description}, {"mask_pixels", mask.nonzero()}};
  if (scan_bin > 1) params["scan_bin"] = scan_bin;  // exact sums over scan_bin x scan_bin positions
  bool binned = false;
  const RadialBasis* basis = ds.encoded() ? ds.encoded()->radial_basis() : nullptr;
  std::optional<RadialBasis::Ranges> shells;
  if (basis) {
    const timing::Stage stage("host");  // the mask against the shells
    shells = basis->match(mask.weights);
  }
  if (shells) {  // a union of the basis' shells: differences of its prefix images, no decoding
    const timing::Stage stage("compute");
    Image<std::uint64_t> img;
    img.data = basis->sums(*shells, 0, scan_bin);
    binned = true;
    out = std::move(img);
    params["strategy"] = "radial basis";
    params["radial_basis"] = {{"center", {basis->center_row(), basis->center_col()}},
                              {"radii", RadialBasis::radii_json(*shells)}};
  } else if (const auto copy = ds.encoded() ? ds.encoded()->scan_binned(scan_bin) : nullptr) {
    // the scan-binned copy (its bin divides scan_bin): the same plan on b^2 fewer frames, then binned the rest
    const timing::Stage stage("compute");
    const std::size_t cb = copy->shape().scan_rows == 0 ? 1 : s.scan_rows / copy->shape().scan_rows;
    const SumPlan plan = plan_masked_sum(mask);
    std::string used;
    Image<std::uint64_t> img;
    img.data = bin_scan_sums(encoded_path::masked_sum(Dataset::from_encoded(copy, {}, {}), plan, &used),
                             copy->shape().scan_rows, copy->shape().scan_cols, scan_bin / cb);
    binned = true;
    out = std::move(img);
    params["strategy"] = "encoded " + used + " on the scan-binned copy";
    params["scan_binned_copy"] = cb;
  } else if (ds.encoded()) {  // both backends: the plan's strategy on the encoded streams
    const timing::Stage stage("compute");
    const SumPlan plan = plan_masked_sum(mask);
    std::string used;
    Image<std::uint64_t> img;
    img.data = encoded_path::masked_sum(ds, plan, &used);
    out = std::move(img);
    params["strategy"] = "encoded " + used;
  } else if (ds.backend() == Backend::cuda) {
    const SumPlan plan = plan_masked_sum(mask);
    params["strategy"] = strategy_name(plan.strategy);
    out = cuda::masked_sum(ds, plan);
  } else if (ds.backend() == Backend::vulkan) {
    const SumPlan plan = plan_masked_sum(mask);
    params["strategy"] = strategy_name(plan.strategy);
    out = vulkan::masked_sum(ds, plan);
  } else {
    params["strategy"] = "reference: every pixel";
    out = cpu::masked_sum(ds, mask);
  }
  if (!binned && scan_bin > 1)
    out.visit([&](auto& img) { img.data = bin_scan_sums(std::move(img.data), s.scan_rows, s.scan_cols, scan_bin); });
  const timing::Stage stage("host");  // provenance and the result
  return finish(std::move(out), ds, op, s.scan_rows / scan_bin, s.scan_cols / scan_bin, std::move(params));
}

}  // namespace

SumImage virtual_image(const Dataset& ds, const Mask& mask, std::size_t scan_bin) {
  return masked_image(ds, mask, "detector.virtual_image", scan_bin);
}

SumImage virtual_image(const Dataset& ds, const SignedMask& mask) {
  MaskParts parts = split_signed(mask);
  const Shape4D& s = ds.shape();
  const std::size_t n = s.scan_rows * s.scan_cols;
  nlohmann::json params = {{"mask", {{"kind", "signed integer"}}}, {"method", "sum(w+ x frame) - sum(w- x frame)"}};
  std::vector<SumImage> got(2);
  const auto part = [&](std::vector<std::uint32_t>& w, int k, const char* name) {
    if (std::all_of(w.begin(), w.end(), [](std::uint32_t v) { return v == 0; })) return;
    got[k] = masked_image(ds, from_weights(parts.rows, parts.cols, std::move(w)), name, 1);
    params[name] = got[k].provenance().parameters;
  };
  part(parts.positive, 0, "positive");
  part(parts.negative, 1, "negative");
  // value i of part k as the result type R, 0 for an empty part; integers: InvalidArgument beyond int64
  const auto value = [&](int k, std::size_t i, auto r) {
    using R = decltype(r);
    if (got[k].rows() == 0) return R(0);
    return got[k].visit([&](const auto& img) -> R {
      const auto v = img.data[i];
      if constexpr (std::is_same_v<R, std::int64_t> && std::is_same_v<decltype(v), const std::uint64_t>)
        if (v > std::uint64_t(INT64_MAX))
          throw InvalidArgument(std::string("virtual image: the ") + (k ? "negative" : "positive") + " weights' sum " +
                                std::to_string(v) + " exceeds the int64 range");
      return R(v);
    });
  };
  const auto combine = [&](auto r) -> SumImage {
    using R = decltype(r);
    Image<R> img;
    img.rows = s.scan_rows;
    img.cols = s.scan_cols;
    img.data.resize(n);
    for (std::size_t i = 0; i < n; ++i) {
      if constexpr (std::is_same_v<R, double>) {
        img.data[i] = value(0, i, R{}) - value(1, i, R{});
      } else if (__builtin_sub_overflow(value(0, i, R{}), value(1, i, R{}), &img.data[i])) {
        throw InvalidArgument("virtual image: the difference of the positive and negative weights' sums at scan "
                              "position " + std::to_string(i) + " leaves the int64 range");
      }
    }
    img.provenance = dataset_provenance(ds, "detector.virtual_image", dtype_name(dtype_of<R>::value),
                                        {img.rows, img.cols}, std::move(params));
    return img;
  };
  return is_float_dtype(ds.dtype()) ? combine(double{}) : combine(std::int64_t{});
}

SumImage bf(const Dataset& ds, std::optional<double> radius, std::optional<Center> center, std::size_t scan_bin) {
  const Shape4D& s = ds.shape();
  std::optional<timing::Stage> stage(std::in_place, "host");  // the disk fit (cached) and its mask
  const DiskFit d = disk_with_overrides(center, radius, [&] { return fit_bf_disk(ds); });
  Mask m = disk(s.det_rows, s.det_cols, d.center_row, d.center_col, d.radius);
  stage.reset();
  SumImage img = masked_image(ds, m, "detector.bf", scan_bin);
  if (!(radius && center)) img.provenance().parameters["bf_disk_fit"] = fit_json(d);
  return img;
}

SumImage adf(const Dataset& ds, double inner, double outer, std::optional<Center> center, std::size_t scan_bin) {
  const Shape4D& s = ds.shape();
  std::optional<DiskFit> fit;
  if (!center) fit = fit_bf_disk(ds);
  const Center c = center ? *center : Center{fit->center_row, fit->center_col};
  SumImage img =
      masked_image(ds, annulus(s.det_rows, s.det_cols, c.first, c.second, inner, outer), "detector.adf", scan_bin);
  if (fit) img.provenance().parameters["bf_disk_fit"] = fit_json(*fit);
  return img;
}

SumImage df(const Dataset& ds, Center center, double radius, std::size_t scan_bin) {
  const Shape4D& s = ds.shape();
  return masked_image(ds, disk(s.det_rows, s.det_cols, center.first, center.second, radius), "detector.df", scan_bin);
}

namespace {

// A detector-shaped product on the dataset's representation and backend.
SumImage pattern(const Dataset& ds, const char* op, std::vector<std::uint64_t> (*encoded)(const Dataset&),
                 SumImage (*gpu)(const Dataset&), SumImage (*vk)(const Dataset&), SumImage (*host)(const Dataset&)) {
  SumImage out;
  if (ds.encoded()) {
    Image<std::uint64_t> img;
    img.data = encoded(ds);
    out = std::move(img);
  } else {
    out = ds.backend() == Backend::cuda ? gpu(ds) : ds.backend() == Backend::vulkan ? vk(ds) : host(ds);
  }
  return finish(std::move(out), ds, op, ds.shape().det_rows, ds.shape().det_cols);
}

}  // namespace

SumImage sum_pattern(const Dataset& ds) {  // encoded: stored while encoding
  return pattern(ds, "detector.sum_pattern", encoded_path::sum_pattern, cuda::sum_pattern, vulkan::sum_pattern,
                 cpu::sum_pattern);
}

SumImage max_pattern(const Dataset& ds) {
  return pattern(ds, "detector.max_pattern", encoded_path::max_pattern, cuda::max_pattern, vulkan::max_pattern,
                 cpu::max_pattern);
}

Image<float> mean_pattern(const Dataset& ds) { return mean_from_sum(sum_pattern(ds), ds.shape().frames()); }

Image<float> mean_from_sum(const SumImage& sum, std::size_t frames) {
  Image<float> img = sum.to_float();  // the provenance too
  const double n = double(frames);
  sum.visit([&](const auto& s) {
    for (std::size_t i = 0; i < s.data.size(); ++i) img.data[i] = float(double(s.data[i]) / n);
  });
  img.provenance.operation = "detector.mean_pattern";
  img.provenance.output_dtype = "float32";
  return img;
}

DiskFit fit_bf_disk(const Dataset& ds) {
  if (auto c = ds.cached<DiskFit>()) return *c;
  auto fit = std::make_shared<const DiskFit>(fit_bf_disk(sum_pattern(ds)));
  ds.set_cached(fit);
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
