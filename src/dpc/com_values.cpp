// CoM of signed-integer and float datasets (either backend): the three weighted sums S = sum I, Sr = sum r I and
// Sc = sum c I as virtual images (detector/virtual_detector.hpp: exact int64 for signed integers, float64
// accumulation for floats), then Sr / S and Sc / S in double, rounded to float32. Unsigned counts take the fused
// kernels (com_cpu, com_cuda, com_encoded), except when scan-binned (com_binned: the sums of b x b positions, from the
// radial basis where it answers).
#include <algorithm>
#include <cmath>
#include <optional>
#include <type_traits>

#include "core/error.hpp"
#include "core/stage_timing.hpp"
#include "detector/virtual_detector.hpp"
#include "dpc/com_backend.hpp"
#include "dpc/com_math.hpp"
#include "resident/encoded/encoded_resident.hpp"
#include "resident/scan_bin.hpp"

namespace qgpu::dpc::detail {

ComWeights com_weights(const Shape4D& sh, const std::uint8_t* mask) {
  const std::size_t fp = sh.frame_pixels();
  ComWeights w{std::vector<std::uint32_t>(fp), std::vector<std::uint32_t>(fp), std::vector<std::uint32_t>(fp)};
  for (std::size_t p = 0; p < fp; ++p) {
    const std::uint32_t on = mask ? mask[p] : 1;
    w.one[p] = on;
    w.row[p] = on * std::uint32_t(p / sh.det_cols);
    w.col[p] = on * std::uint32_t(p % sh.det_cols);
  }
  return w;
}

namespace {

// Sr / S and Sc / S in double, rounded to float32, of `n` values; an empty one (S == 0) gets the detector centre, as
// for counts. Counts whose weighted sums may have wrapped raise, as the fused kernels do.
ComMaps from_sums(const Shape4D& sh, const SumImage& s, const SumImage& sr, const SumImage& sc, std::size_t n) {
  const double centre_r = (double(sh.det_rows) - 1) / 2, centre_c = (double(sh.det_cols) - 1) / 2;
  const std::uint64_t max_index = std::max(sh.det_rows, sh.det_cols) - 1;
  ComMaps out;
  out.row.resize(n);
  out.col.resize(n);
  s.visit([&](const auto& si) {
    using A = typename std::decay_t<decltype(si.data)>::value_type;
    const auto& ri = std::get<Image<A>>(sr.image);
    const auto& ci = std::get<Image<A>>(sc.image);
    for (std::size_t f = 0; f < n; ++f) {
      if (si.data[f] == A(0)) {
        ++out.empty_frames;
        out.row[f] = float(centre_r);
        out.col[f] = float(centre_c);
        continue;
      }
      if constexpr (std::is_same_v<A, std::uint64_t>) {
        if (com_sums_may_wrap(si.data[f], max_index))
          throw Error("CoM: a frame's weighted sums exceed the exact uint64 range (counts too large for this detector)");
        com_from_sums(si.data[f], ri.data[f], ci.data[f], centre_r, centre_c, out.row[f], out.col[f]);
      } else {
        const double total = double(si.data[f]);
        out.row[f] = float(double(ri.data[f]) / total);
        out.col[f] = float(double(ci.data[f]) / total);
      }
    }
  });
  return out;
}

}  // namespace

ComMaps com_values(const Dataset& ds, const std::uint8_t* mask) { return com_binned(ds, mask, 1); }

ComMaps com_binned(const Dataset& ds, const std::uint8_t* mask, std::size_t b) {
  const Shape4D& sh = ds.shape();
  check_scan_bin(sh, b);
  const std::size_t n = (sh.scan_rows / b) * (sh.scan_cols / b);
  if (b > 1 && ds.encoded() && ds.backend() == Backend::cuda) {
    const timing::Stage stage("compute");
    if (auto maps = com_encoded_cuda_binned(ds, mask, b)) return std::move(*maps);
  }
  const RadialBasis* basis = ds.encoded() ? ds.encoded()->radial_basis() : nullptr;
  if (const auto shells = basis ? basis->match(mask) : std::nullopt) {  // binned on the GPU for cuda
    const auto image = [&](int q) {
      const timing::Stage stage("compute");
      Image<std::uint64_t> img;
      img.data = basis->sums(*shells, q, b);
      return SumImage(std::move(img));
    };
    SumImage s0 = image(0), s1 = image(1), s2 = image(2);
    const timing::Stage stage("host");  // the CoM from the sums
    ComMaps out = from_sums(sh, std::move(s0), std::move(s1), std::move(s2), n);
    out.radial_basis = basis_json(*basis, *shells);
    return out;
  }
  if (const auto copy = ds.encoded() ? ds.encoded()->scan_binned(b) : nullptr) {
    // the scan-binned copy (its bin divides b): S, Sr, Sc in one decode of its frames, then binned the rest
    const Shape4D& cs = copy->shape();
    const std::size_t rest = b / (sh.scan_rows / cs.scan_rows);
    std::string used;
    std::vector<std::vector<std::uint64_t>> sums = copy->moment_sums(mask, &used);
    const auto image = [&](int q) {
      Image<std::uint64_t> img;
      img.data = bin_scan_sums(std::move(sums[q]), cs.scan_rows, cs.scan_cols, rest);
      return SumImage(std::move(img));
    };
    ComMaps out = from_sums(sh, image(0), image(1), image(2), n);
    out.scan_binned_copy = sh.scan_rows / cs.scan_rows;
    out.encoded_sums = used;
    return out;
  }
  ComWeights w = com_weights(sh, mask);
  const auto image = [&](std::vector<std::uint32_t>& weights) {
    return detector::virtual_image(ds, detector::from_weights(sh.det_rows, sh.det_cols, std::move(weights)), b);
  };
  return from_sums(sh, image(w.one), image(w.row), image(w.col), n);
}

}  // namespace qgpu::dpc::detail
