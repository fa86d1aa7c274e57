#include "detector/cpu/masked_sum_cpu.hpp"

#include <algorithm>

#include "core/parallel_for.hpp"

namespace qgpu::detector::cpu {

std::vector<std::uint64_t> masked_sum(const Dataset& ds, const Mask& mask) {
  const Shape4D& s = ds.shape();
  std::vector<std::uint64_t> out(s.frames(), 0);
  dispatch_count_dtype(ds.dtype(), [&](auto z) {
    using T = decltype(z);
    const T* data = reinterpret_cast<const T*>(ds.host_bytes().data());
    const std::size_t fp = s.frame_pixels();
    for (std::size_t f = 0; f < s.frames(); ++f) {
      std::uint64_t acc = 0;
      for (std::size_t k = 0; k < fp; ++k) acc += std::uint64_t(mask.weights[k]) * data[f * fp + k];
      out[f] = acc;
    }
  });
  return out;
}

std::vector<std::uint64_t> sum_pattern(const Dataset& ds) {
  const Shape4D& s = ds.shape();
  std::vector<std::uint64_t> out(s.frame_pixels(), 0);
  dispatch_count_dtype(ds.dtype(), [&](auto z) {
    using T = decltype(z);
    const T* data = reinterpret_cast<const T*>(ds.host_bytes().data());
    for (std::size_t f = 0; f < s.frames(); ++f)
      for (std::size_t k = 0; k < out.size(); ++k) out[k] += data[f * out.size() + k];
  });
  return out;
}

std::vector<std::uint64_t> max_pattern(const Dataset& ds) {
  const Shape4D& s = ds.shape();
  const std::size_t frame = s.frame_pixels();
  std::vector<std::uint64_t> out(frame, 0);
  constexpr std::size_t kBlock = 256;  // pixels per task: each task walks every frame over its block
  dispatch_count_dtype(ds.dtype(), [&](auto z) {
    using T = decltype(z);
    const T* data = reinterpret_cast<const T*>(ds.host_bytes().data());
    parallel_for((frame + kBlock - 1) / kBlock, [&](std::size_t b) {
      const std::size_t k0 = b * kBlock, k1 = std::min(frame, k0 + kBlock);
      T most[kBlock] = {};
      for (std::size_t f = 0; f < s.frames(); ++f) {
        const T* fr = data + f * frame + k0;
        for (std::size_t k = 0; k < k1 - k0; ++k) most[k] = std::max(most[k], fr[k]);
      }
      std::copy(most, most + (k1 - k0), out.begin() + std::ptrdiff_t(k0));
    });
  });
  return out;
}

}  // namespace qgpu::detector::cpu
