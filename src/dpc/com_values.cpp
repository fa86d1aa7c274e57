// CoM of signed-integer and float datasets (either backend): the three weighted sums S = sum I, Sr = sum r I and
// Sc = sum c I as virtual images (detector/virtual_detector.hpp: exact int64 for signed integers, float64
// accumulation for floats), then Sr / S and Sc / S in double, rounded to float32. Unsigned counts take the fused
// kernels (com_cpu, com_cuda, com_encoded).
#include <cmath>

#include "detector/virtual_detector.hpp"
#include "dpc/com_backend.hpp"

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

ComMaps com_values(const Dataset& ds, const std::uint8_t* mask) {
  const Shape4D& sh = ds.shape();
  ComWeights w = com_weights(sh, mask);
  const SumImage s = detector::virtual_image(ds, detector::from_weights(sh.det_rows, sh.det_cols, std::move(w.one)));
  const SumImage sr = detector::virtual_image(ds, detector::from_weights(sh.det_rows, sh.det_cols, std::move(w.row)));
  const SumImage sc = detector::virtual_image(ds, detector::from_weights(sh.det_rows, sh.det_cols, std::move(w.col)));
  const double centre_r = (double(sh.det_rows) - 1) / 2, centre_c = (double(sh.det_cols) - 1) / 2;
  ComMaps out;
  out.row.resize(sh.frames());
  out.col.resize(sh.frames());
  s.visit([&](const auto& si) {
    using A = typename std::decay_t<decltype(si.data)>::value_type;
    const auto& ri = std::get<Image<A>>(sr.image);
    const auto& ci = std::get<Image<A>>(sc.image);
    for (std::size_t f = 0; f < sh.frames(); ++f) {
      if (si.data[f] == A(0)) {  // an empty frame gets the detector centre, as for counts
        ++out.empty_frames;
        out.row[f] = float(centre_r);
        out.col[f] = float(centre_c);
        continue;
      }
      const double total = double(si.data[f]);
      out.row[f] = float(double(ri.data[f]) / total);
      out.col[f] = float(double(ci.data[f]) / total);
    }
  });
  return out;
}

}  // namespace qgpu::dpc::detail
