#include "dpc/com.hpp"

#include <cmath>
#include <string>
#include <vector>

#include "core/result_memory.hpp"
#include "core/derived_provenance.hpp"
#include "core/error.hpp"
#include "core/stage_timing.hpp"
#include "core/host_bytes.hpp"
#include "core/parallel_for.hpp"
#include "dpc/com_backend.hpp"
#include "dpc/com_math.hpp"
#include "resident/dataset_provenance.hpp"
#include "resident/scan_bin.hpp"

namespace qgpu::dpc {

namespace {

void validate_mask(const std::vector<std::uint8_t>& mask, const Shape4D& sh) {
  if (mask.empty()) return;
  if (mask.size() != sh.frame_pixels())
    throw InvalidArgument("CoM mask has " + std::to_string(mask.size()) + " values but the detector has " +
                          std::to_string(sh.det_rows) + "x" + std::to_string(sh.det_cols) + " = " +
                          std::to_string(sh.frame_pixels()) + " pixels");
  std::size_t selected = 0;
  for (std::size_t i = 0; i < mask.size(); ++i) {
    if (mask[i] > 1)
      throw InvalidArgument("CoM mask value " + std::to_string(mask[i]) + " at pixel " + std::to_string(i) +
                            " is not 0 or 1");
    selected += mask[i];
  }
  if (selected == 0) throw InvalidArgument("CoM mask selects no detector pixel");
}

void check_com_maps(const ComResult& com) {
  const Image<float>& a = com.com_row;
  const Image<float>& b = com.com_col;
  if (a.rows != b.rows || a.cols != b.cols || a.data.size() != a.rows * a.cols || b.data.size() != a.data.size())
    throw InvalidArgument("centered_dpc: CoM row and col maps differ in shape");
  if (a.data.empty()) throw InvalidArgument("centered_dpc: empty CoM maps");
}

Image<float> make_map(std::vector<float> values, const Shape4D& sh, const Provenance& p, const char* component) {
  Image<float> im;
  im.rows = sh.scan_rows;
  im.cols = sh.scan_cols;
  im.data = std::move(values);
  im.provenance = p;
  im.provenance.parameters["component"] = component;
  return im;
}

}  // namespace

ComResult center_of_mass(const Dataset& ds, const ComOptions& options) {
  return detail::center_of_mass(ds, options, nullptr);
}

namespace detail {

ComResult center_of_mass(const Dataset& ds, const ComOptions& options, DeviceMaps* keep) {
  const Shape4D& sh = ds.shape();
  if (sh.frames() == 0 || sh.frame_pixels() == 0) throw InvalidArgument("CoM of an empty dataset");
  if (sh.frame_pixels() >= (std::size_t(1) << 32))
    throw InvalidArgument("CoM: detector of " + std::to_string(sh.frame_pixels()) + " pixels is too large");
  validate_mask(options.mask, sh);
  check_scan_bin(sh, options.scan_bin);
  const std::uint8_t* mask = options.mask.empty() ? nullptr : options.mask.data();
  const std::size_t b = options.scan_bin;
  const Shape4D out_shape{sh.scan_rows / b, sh.scan_cols / b, sh.det_rows, sh.det_cols};

  // No fallback: the dataset's residency decides the backend.
  const bool counts = is_count_dtype(ds.dtype());
  detail::ComMaps maps = b > 1                           ? detail::com_binned(ds, mask, b)
                         : !counts                         ? detail::com_values(ds, mask)
                         : ds.encoded()                    ? detail::com_encoded(ds, mask, keep)
                         : ds.backend() == Backend::cuda ? detail::com_cuda(ds, mask, keep)
                         : ds.backend() == Backend::vulkan ? detail::com_vulkan(ds, mask)
                                                         : detail::com_cpu(ds, mask);

  const timing::Stage stage("host");  // provenance and the result
  std::size_t selected = sh.frame_pixels();
  if (mask) {
    selected = 0;
    for (std::uint8_t m : options.mask) selected += m;
  }
  Provenance p = dataset_provenance(
      ds, "dpc.center_of_mass", dtype_name(DType::f32), {out_shape.scan_rows, out_shape.scan_cols},
      {{"mask", mask != nullptr},
       {"mask_pixels", selected},
       {"coordinates", "detector pixel index (row, col), pixel (0,0) at 0"},
       {"accumulation", counts                       ? "exact uint64 sums, double division, rounded to float32"
                        : is_float_dtype(ds.dtype()) ? "float64 sums, double division, rounded to float32"
                                                     : "exact int64 sums, double division, rounded to float32"},
       {"empty_frame_value", {(double(sh.det_rows) - 1) / 2, (double(sh.det_cols) - 1) / 2}},
       {"empty_frames", maps.empty_frames}});
  if (b > 1) p.parameters["scan_bin"] = b;  // the CoM of b x b blocks of positions (their summed S, Sr, Sc)
  if (!maps.radial_basis.is_null()) {
    p.parameters["strategy"] = "radial basis";
    p.parameters["radial_basis"] = maps.radial_basis;
  }
  if (!maps.encoded_sums.empty()) p.parameters["strategy"] = "encoded " + maps.encoded_sums;
  if (maps.scan_binned_copy) {
    p.parameters["strategy"] = "encoded " + maps.encoded_sums + " on the scan-binned copy";
    p.parameters["scan_binned_copy"] = maps.scan_binned_copy;
  }

  ComResult r;
  r.com_row = make_map(std::move(maps.row), out_shape, p, "row");
  r.com_col = make_map(std::move(maps.col), out_shape, p, "col");
  r.empty_frames = maps.empty_frames;
  r.provenance = std::move(p);
  return r;
}

std::pair<double, double> mean_com(const ComResult& com) {
  const std::vector<float>& a = com.com_row.data;
  const std::vector<float>& b = com.com_col.data;
  // Partial sums of fixed blocks on every core, added in order (the same bits on any machine).
  const std::size_t n = a.size(), blocks = (n + kHostBlock - 1) / kHostBlock;
  std::vector<double> part_r(blocks), part_c(blocks);
  parallel_blocks(n, kHostBlock, [&](std::size_t i0, std::size_t i1) {
    double sr = 0, sc = 0;
    for (std::size_t i = i0; i < i1; ++i) {
      sr += a[i];
      sc += b[i];
    }
    part_r[i0 / kHostBlock] = sr;
    part_c[i0 / kHostBlock] = sc;
  });
  double sr = 0, sc = 0;
  for (std::size_t k = 0; k < blocks; ++k) {
    sr += part_r[k];
    sc += part_c[k];
  }
  return {sr / double(n), sc / double(n)};
}

DpcResult centered_dpc_at(const ComResult& com, std::pair<double, double> reference, bool given, bool fill) {
  check_com_maps(com);
  const Image<float>& a = com.com_row;
  const Image<float>& b = com.com_col;
  DpcResult r;
  r.ref_row = reference.first;
  r.ref_col = reference.second;
  // A small host operation on host maps; the result keeps the CoM's backend so that later steps run there too, and
  // the representation of the dataset the CoM came from.
  Provenance p = derived_provenance("dpc.centered_dpc", backend_name(backend_of(com.provenance)), com.provenance,
                                    {2, a.rows, a.cols}, {2, a.rows, a.cols},
                                    {{"reference", {r.ref_row, r.ref_col}},
                                     {"reference_source", given ? "given" : "mean_com"},
                                     {"com_backend", com.provenance.backend},
                                     {"computed_on", "host"}});

  auto shifted = [&](const Image<float>& in, double ref, const char* component) {
    Image<float> out;
    out.rows = in.rows;
    out.cols = in.cols;
    out.data = result_vector<float>(in.data.size());  // every value written below (or by the caller)
    if (fill) parallel_blocks(in.data.size(), kHostBlock, [&](std::size_t i0, std::size_t i1) {
      for (std::size_t i = i0; i < i1; ++i) out.data[i] = detail::centred_value(in.data[i], ref);
    });
    out.provenance = p;
    out.provenance.parameters["component"] = component;
    return out;
  };
  r.dpc_row = shifted(a, r.ref_row, "row");
  r.dpc_col = shifted(b, r.ref_col, "col");
  r.provenance = std::move(p);
  return r;
}

}  // namespace detail

DpcResult centered_dpc(const ComResult& com, std::optional<std::pair<double, double>> reference) {
  check_com_maps(com);
  if (reference && (!std::isfinite(reference->first) || !std::isfinite(reference->second)))
    throw InvalidArgument("centered_dpc: reference centre is not finite");
  return detail::centered_dpc_at(com, reference ? *reference : detail::mean_com(com), reference.has_value());
}

}  // namespace qgpu::dpc
