#include <algorithm>

#include "device/cuda/cuda_check.hpp"
#include "device/cuda/device_buffer.hpp"
#include "device/cuda/launch.hpp"
#include "io/source/nonfinite.hpp"

namespace qgpu::io::cuda {

namespace {

// Grid-stride; the warp's non-finite values counted with one atomic per warp.
__global__ void zero_nonfinite_kernel(float* v, std::size_t n, unsigned long long* count) {
  for (std::size_t base = (blockIdx.x * std::size_t(blockDim.x) + threadIdx.x) & ~std::size_t(31); base < n;
       base += std::size_t(gridDim.x) * blockDim.x) {
    const std::size_t i = base + (threadIdx.x & 31);
    bool bad = false;
    if (i < n) {
      const float x = v[i];
      bad = !isfinite(x);
      if (bad) v[i] = 0.0f;
    }
    const unsigned ballot = __ballot_sync(0xffffffffu, bad);
    if ((threadIdx.x & 31) == 0 && ballot) atomicAdd(count, static_cast<unsigned long long>(__popc(ballot)));
  }
}

}  // namespace

std::uint64_t zero_nonfinite(float* d_values, std::size_t n) {
  if (n == 0) return 0;
  DeviceBuffer count(sizeof(unsigned long long));
  QGPU_CUDA(cudaMemset(count.data(), 0, count.bytes()));
  const unsigned threads = 256;
  const std::size_t blocks = grid_blocks(n, threads, 65535u * 8u);  // grid-stride
  zero_nonfinite_kernel<<<unsigned(blocks), threads>>>(d_values, n, count.as<unsigned long long>());
  QGPU_CUDA_LAUNCHED("zero_nonfinite_kernel");
  unsigned long long host = 0;
  count.download(&host, sizeof host);
  return host;
}

}  // namespace qgpu::io::cuda
