#include <cub/device/device_radix_sort.cuh>

#include <algorithm>
#include <limits>

#include "device/cuda/cuda_check.hpp"
#include "device/cuda/buffer_pool.hpp"
#include "display/cuda/launch.hpp"
#include "display/cuda/range_cuda.hpp"
#include "display/scaling.hpp"

namespace qgpu::display::cuda {

namespace {

// keys[i] = scaled value of pixel i, or +inf for a non-finite pixel (finite pixels never scale to +inf, so
// after an ascending sort the first n_finite keys are exactly the scaled finite values). Counts finite pixels.
__global__ void scale_kernel(const float* in, std::size_t n, Scale scale, float* keys,
                             unsigned long long* n_finite) {
  unsigned long long block_count = 0;
  // The loop bound depends on the block only, so every thread reaches each __syncthreads_count.
  for (std::size_t base = std::size_t(blockIdx.x) * blockDim.x; base < n; base += std::size_t(gridDim.x) * blockDim.x) {
    const std::size_t i = base + threadIdx.x;
    bool finite = false;
    if (i < n) {
      const float v = in[i];
      finite = is_finite(v);
      keys[i] = finite ? scale_value(v, scale) : std::numeric_limits<float>::infinity();
    }
    block_count += static_cast<unsigned long long>(__syncthreads_count(finite));
  }
  if (threadIdx.x == 0 && block_count) atomicAdd(n_finite, block_count);
}

}  // namespace

Range find_range_on_device(const float* d_data, std::size_t n, const DisplayOptions& o) {
  if (range_is_explicit(o)) return resolve_range(o, 0, {});
  require_int_size(n, "display range: pixel count");
  LeasedBuffer keys(n * sizeof(float)), sorted(n * sizeof(float)), count(sizeof(unsigned long long));  // pooled
  QGPU_CUDA(cudaMemset(count.data(), 0, sizeof(unsigned long long)));
  scale_kernel<<<blocks_for(n), kThreads>>>(d_data, n, o.scale, keys.as<float>(), count.as<unsigned long long>());
  QGPU_CUDA_LAUNCHED("display scale_kernel");
  unsigned long long n_finite = 0;
  count.buffer().download(&n_finite, sizeof n_finite);
  if (n_finite == 0) return resolve_range(o, 0, {});

  std::size_t temp_bytes = 0;
  QGPU_CUDA(cub::DeviceRadixSort::SortKeys(nullptr, temp_bytes, keys.as<float>(), sorted.as<float>(),
                                           static_cast<int>(n)));
  // At least one byte: a null temp pointer would make the second call another size query.
  LeasedBuffer temp(std::max<std::size_t>(temp_bytes, 1));
  QGPU_CUDA(cub::DeviceRadixSort::SortKeys(temp.data(), temp_bytes, keys.as<float>(), sorted.as<float>(),
                                           static_cast<int>(n)));
  QGPU_CUDA_LAUNCHED("display cub::DeviceRadixSort::SortKeys");
  return resolve_range(o, static_cast<std::size_t>(n_finite), [&](std::size_t k) {
    float v = 0.0f;
    sorted.buffer().download(&v, sizeof v, k * sizeof(float));  // synchronous: waits for the sort
    return v;
  });
}

}  // namespace qgpu::display::cuda
