#pragma once
// The encoded masked-sum kernel (masked_sum_kernel.cu), launched by encoded::cuda::masked_sums. Internal to the
// encoded CUDA backend.
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "resident/encoded/format.hpp"
#include "resident/encoded/layout.hpp"

namespace qgpu::encoded::cuda::detail {

// K (1..3) weightings [k][npix] of the npix listed pixels summed per scan position into out [k][frames] (zeroed
// by the caller); sets *error to 1 on a malformed stream. Asynchronous on `stream`.
void launch_masked_sums(const Layout& layout, const TileRef* d_tiles, const std::uint32_t* d_pixels,
                        const std::uint32_t* d_weights, std::size_t npix, int K, unsigned long long* out, int* error,
                        cudaStream_t stream);

}  // namespace qgpu::encoded::cuda::detail
