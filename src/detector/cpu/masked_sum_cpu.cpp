#include "detector/cpu/masked_sum_cpu.hpp"

#include <algorithm>
#include <limits>

#include "core/parallel_for.hpp"

namespace qgpu::detector::cpu {

SumImage masked_sum(const Dataset& ds, const Mask& mask) {
  const Shape4D& s = ds.shape();
  return dispatch_stored_dtype(ds.dtype(), [&](auto z) -> SumImage {
    using T = decltype(z);
    using A = sum_t<T>;
    Image<A> img;
    img.data.assign(s.frames(), A(0));
    const T* data = reinterpret_cast<const T*>(ds.host_bytes().data());
    const std::size_t fp = s.frame_pixels();
    for (std::size_t f = 0; f < s.frames(); ++f) {
      A acc = 0;
      for (std::size_t k = 0; k < fp; ++k) acc += A(mask.weights[k]) * A(data[f * fp + k]);
      img.data[f] = acc;
    }
    return img;
  });
}

SumImage sum_pattern(const Dataset& ds) {
  const Shape4D& s = ds.shape();
  return dispatch_stored_dtype(ds.dtype(), [&](auto z) -> SumImage {
    using T = decltype(z);
    using A = sum_t<T>;
    Image<A> img;
    img.data.assign(s.frame_pixels(), A(0));
    const T* data = reinterpret_cast<const T*>(ds.host_bytes().data());
    const std::size_t fp = img.data.size();
    for (std::size_t f = 0; f < s.frames(); ++f)
      for (std::size_t k = 0; k < fp; ++k) img.data[k] += A(data[f * fp + k]);
    return img;
  });
}

SumImage max_pattern(const Dataset& ds) {
  const Shape4D& s = ds.shape();
  const std::size_t frame = s.frame_pixels();
  constexpr std::size_t kBlock = 256;  // pixels per task: each task walks every frame over its block
  return dispatch_stored_dtype(ds.dtype(), [&](auto z) -> SumImage {
    using T = decltype(z);
    using A = sum_t<T>;
    Image<A> img;
    img.data.assign(frame, A(0));
    const T* data = reinterpret_cast<const T*>(ds.host_bytes().data());
    parallel_for((frame + kBlock - 1) / kBlock, [&](std::size_t b) {
      const std::size_t k0 = b * kBlock, k1 = std::min(frame, k0 + kBlock);
      T most[kBlock];
      std::fill(most, most + kBlock, std::numeric_limits<T>::lowest());
      for (std::size_t f = 0; f < s.frames(); ++f) {
        const T* fr = data + f * frame + k0;
        for (std::size_t k = 0; k < k1 - k0; ++k) most[k] = std::max(most[k], fr[k]);
      }
      for (std::size_t k = 0; k < k1 - k0; ++k) img.data[k0 + k] = A(most[k]);
    });
    return img;
  });
}

}  // namespace qgpu::detector::cpu
