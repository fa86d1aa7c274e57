#include <cstdint>
#include <limits>
#include <type_traits>

#include "io/hdf5/binning.hpp"

#include "device/cuda/cuda_check.hpp"
#include "device/cuda/launch.hpp"
#include "io/hdf5/cuda/bin_frames.hpp"

namespace qgpu::io::cuda {

namespace {

template <class T, class U>
__global__ void bin_kernel(const T* in, U* out, BinGeometry g, int* overflow) {
  const std::size_t per_frame = g.out_det_r * g.out_det_c;
  const std::size_t total = g.out_rows * g.out_cols * per_frame;
  const std::size_t fp = g.det_rows * g.det_cols;
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < total;
       i += std::size_t(gridDim.x) * blockDim.x) {
    const std::size_t frame = i / per_frame, px = i % per_frame;
    const std::size_t orow = frame / g.out_cols, ocol = frame % g.out_cols;
    const std::size_t pr = px / g.out_det_c, pc = px % g.out_det_c;
    sum_t<T> sum = 0;
    for (std::size_t sr = 0; sr < g.bin_s; ++sr)
      for (std::size_t sc = 0; sc < g.bin_s; ++sc) {
        const T* f = in + ((orow * g.bin_s + sr) * g.in_cols + ocol * g.bin_s + sc) * fp;
        for (std::size_t dr = 0; dr < g.bin_d; ++dr) {
          const T* row = f + (g.det_row0 + pr * g.bin_d + dr) * g.det_cols + g.det_col0 + pc * g.bin_d;
          for (std::size_t dc = 0; dc < g.bin_d; ++dc) sum += row[dc];
        }
      }
    if constexpr (std::is_integral_v<U>) {
      if (sum > sum_t<T>(std::numeric_limits<U>::max())) *overflow = 1;
      if constexpr (std::is_signed_v<U>)
        if (sum < sum_t<T>(std::numeric_limits<U>::lowest())) *overflow = 1;
    }
    out[i] = static_cast<U>(sum);
  }
}

template <class T, class U>
void launch(const void* in, void* out, const BinGeometry& g, int* overflow, cudaStream_t s) {
  const std::size_t total = g.out_rows * g.out_cols * g.out_det_r * g.out_det_c;
  if (total == 0) return;
  const unsigned threads = 256;
  const std::size_t blocks = grid_blocks(total, threads, 65535u * 16u);  // grid-stride
  bin_kernel<T, U><<<unsigned(blocks), threads, 0, s>>>(static_cast<const T*>(in), static_cast<U*>(out), g, overflow);
  QGPU_CUDA_LAUNCHED("bin_kernel");
}

}  // namespace

void bin_frames(const void* in, DType in_t, void* out, DType out_t, const BinGeometry& g, int* overflow,
                cudaStream_t s) {
  dispatch_stored_dtype(in_t, [&](auto t) {
    using T = decltype(t);
    if (out_t == in_t) return launch<T, T>(in, out, g, overflow, s);
    if (out_t == binned_dtype(in_t)) return launch<T, binned_t<T>>(in, out, g, overflow, s);
    throw DTypeError("bin_frames: unsupported output dtype " + dtype_name(out_t));
  });
}

}  // namespace qgpu::io::cuda
