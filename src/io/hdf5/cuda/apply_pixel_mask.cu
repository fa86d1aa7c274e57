#include <algorithm>

#include "device/cuda/cuda_check.hpp"
#include "device/cuda/launch.hpp"
#include "io/hdf5/cuda/apply_pixel_mask.hpp"

namespace qgpu::io::cuda {

namespace {

// One thread per (frame, listed pixel), grid-stride.
template <class T>
__global__ void zero_pixels_kernel(T* frames, std::size_t n_frames, std::size_t frame_pixels,
                                   const std::uint32_t* pixels, std::size_t n_pixels, unsigned long long* totals) {
  const std::size_t total = n_frames * n_pixels;
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < total;
       i += std::size_t(gridDim.x) * blockDim.x) {
    const std::size_t frame = i / n_pixels, k = i % n_pixels;
    T& v = frames[frame * frame_pixels + pixels[k]];
    if (totals && v) atomicAdd(totals + frame, 0ull - static_cast<unsigned long long>(v));  // (modulo 2^64)
    v = T(0);
  }
}

}  // namespace

void apply_pixel_mask(void* d_frames, DType dtype, std::size_t n_frames, std::size_t frame_pixels,
                      const std::uint32_t* d_pixels, std::size_t n_pixels, cudaStream_t stream,
                      unsigned long long* d_totals) {
  const std::size_t total = n_frames * n_pixels;
  if (total == 0) return;
  const int threads = 256;
  const int blocks = int(grid_blocks(total, threads, 65535 * 8));  // grid-stride
  dispatch_stored_dtype(dtype, [&](auto t) {
    using T = decltype(t);
    zero_pixels_kernel<T><<<blocks, threads, 0, stream>>>(static_cast<T*>(d_frames), n_frames, frame_pixels,
                                                          d_pixels, n_pixels, d_totals);
  });
  QGPU_CUDA_LAUNCHED("zero_pixels_kernel");
}

}  // namespace qgpu::io::cuda
