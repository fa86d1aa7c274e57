#include "device/cuda/cuda_check.hpp"
#include "device/cuda/device_buffer.hpp"
#include "display/cuda/display_cuda.hpp"
#include "display/cuda/launch.hpp"
#include "display/cuda/range_cuda.hpp"
#include "display/scaling.hpp"

namespace qgpu::display::cuda {

namespace {

// One 256-bin histogram per block in shared memory (32-bit: a block sees fewer than 2^31 pixels), then added
// to the global 64-bit counts.
__global__ void histogram_kernel(const float* in, std::size_t n, Scale scale, double lo, double hi,
                                 unsigned long long* counts) {
  __shared__ unsigned int bins[256];
  for (unsigned i = threadIdx.x; i < 256; i += blockDim.x) bins[i] = 0;
  __syncthreads();
  for (std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x) {
    const float v = in[i];
    if (is_finite(v)) atomicAdd(&bins[color_index(scale_value(v, scale), lo, hi)], 1u);
  }
  __syncthreads();
  for (unsigned i = threadIdx.x; i < 256; i += blockDim.x)
    if (bins[i]) atomicAdd(&counts[i], static_cast<unsigned long long>(bins[i]));
}

}  // namespace

Range histogram(const float* data, std::size_t n, const DisplayOptions& o, std::array<std::uint64_t, 256>& counts) {
  require_int_size(n, "display histogram: pixel count");
  DeviceBuffer d_in(n * sizeof(float)), d_counts(256 * sizeof(unsigned long long));
  d_in.upload(data, n * sizeof(float));
  const Range r = find_range_on_device(d_in.as<float>(), n, o);
  QGPU_CUDA(cudaMemset(d_counts.data(), 0, d_counts.bytes()));
  histogram_kernel<<<blocks_for(n), kThreads>>>(d_in.as<float>(), n, o.scale, r.lo, r.hi,
                                                d_counts.as<unsigned long long>());
  QGPU_CUDA_LAUNCHED("display histogram_kernel");
  static_assert(sizeof(unsigned long long) == sizeof(std::uint64_t));
  d_counts.download(counts.data(), 256 * sizeof(std::uint64_t));
  return r;
}

}  // namespace qgpu::display::cuda
