#pragma once
// The CPU gather shared by the SSB and parallax engines: for each group of detector pixels (pixels[offsets[g] ..
// offsets[g + 1]) ) the summed counts at every scan position, as doubles added in the listed pixel order, from a
// dense host dataset or an encoded one (only the listed pixels' streams decoded, pixel-major). out(g, s, sum) takes
// each sum.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "resident/dataset.hpp"
#include "resident/encoded/encoded_resident.hpp"

namespace qgpu::detector::cpu {

template <class Out>
void pixel_group_sums(const Dataset& ds, const std::vector<std::uint32_t>& offsets,
                      const std::vector<std::uint32_t>& pixels, Out&& out) {
  const std::size_t n = ds.shape().frames(), frame = ds.shape().frame_pixels(), groups = offsets.size() - 1;
  std::vector<std::uint8_t> decoded;
  if (ds.encoded()) decoded = ds.encoded()->pixels(pixels);  // [k][scan]
  dispatch_stored_dtype(ds.dtype(), [&](auto tag) {  // encoded datasets hold counts only
    using T = decltype(tag);
    if (ds.encoded()) {
      const T* v = reinterpret_cast<const T*>(decoded.data());
      for (std::size_t s = 0; s < n; ++s)
        for (std::size_t g = 0; g < groups; ++g) {
          double sum = 0;
          for (std::uint32_t k = offsets[g]; k < offsets[g + 1]; ++k) sum += double(v[std::size_t(k) * n + s]);
          out(g, s, sum);
        }
      return;
    }
    const T* data = reinterpret_cast<const T*>(ds.host_bytes().data());
    for (std::size_t s = 0; s < n; ++s) {
      const T* f = data + s * frame;
      for (std::size_t g = 0; g < groups; ++g) {
        double sum = 0;
        for (std::uint32_t k = offsets[g]; k < offsets[g + 1]; ++k) sum += double(f[pixels[k]]);
        out(g, s, sum);
      }
    }
  });
}

}  // namespace qgpu::detector::cpu
