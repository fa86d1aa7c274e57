// CoM on the vulkan backend: the three exact sums of every frame (S = sum I, Sr = sum r I, Sc = sum c I over the
// selected pixels) in one pass (detector/vulkan: every pixel with its row and column from its index, or the
// selected pixels' list), then the reference's division (com_math.hpp) on the host:
// the maps equal the CPU reference bit for bit.
#include <algorithm>

#include "core/error.hpp"
#include "detector/vulkan/sums_vulkan.hpp"
#include "dpc/com_backend.hpp"
#include "dpc/com_math.hpp"

namespace qgpu::dpc::detail {

ComMaps com_vulkan(const Dataset& ds, const std::uint8_t* mask) {
  const Shape4D& sh = ds.shape();
  const std::size_t frames = sh.frames();
  const std::vector<std::uint64_t> sums = detector::vulkan::com_sums(ds, mask);
  const double centre_r = (double(sh.det_rows) - 1) / 2, centre_c = (double(sh.det_cols) - 1) / 2;
  const std::uint64_t max_index = std::max(sh.det_rows, sh.det_cols) - 1;
  ComMaps out;
  out.row.resize(frames);
  out.col.resize(frames);
  bool wrapped = false;
  for (std::size_t f = 0; f < frames; ++f) {
    const std::uint64_t s = sums[3 * f], sr = sums[3 * f + 1], sc = sums[3 * f + 2];
    if (com_sums_may_wrap(s, max_index)) wrapped = true;
    if (s == 0) ++out.empty_frames;
    com_from_sums(s, sr, sc, centre_r, centre_c, out.row[f], out.col[f]);
  }
  if (wrapped)
    throw Error("CoM: a frame's weighted sums exceed the exact uint64 range (counts too large for this detector)");
  return out;
}

}  // namespace qgpu::dpc::detail
