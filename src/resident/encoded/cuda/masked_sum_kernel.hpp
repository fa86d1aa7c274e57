#pragma once
// The fast encoded masked-sum kernels (masked_sum_kernel.cu, masked_sum_ilp_kernel.cu), launched by
// encoded::cuda::masked_sums when SumKernel::fast, fast_window, fast_ilp or fast_ilp_window is asked for. Internal to the encoded CUDA backend.
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "resident/encoded/format.hpp"
#include "resident/encoded/layout.hpp"

namespace qgpu::encoded::cuda::detail {

// K (1..3) weightings [k][npix] of the npix listed pixels summed per scan position into out [k][frames] (zeroed
// by the caller); sets *error to 1 on a malformed stream. word_window: rANS bytes through the register window
// (LaneDecoderWords) instead of one load per byte. Asynchronous on `stream`.
void launch_masked_sums_fast(const Layout& layout, const TileRef* d_tiles, const std::uint32_t* d_pixels,
                             const std::uint32_t* d_weights, std::size_t npix, int K, bool word_window,
                             unsigned long long* out, int* error, cudaStream_t stream);

// The same sums with two streams per lane and smaller shared tables (SumKernel::fast_ilp; word_window:
// fast_ilp_window).
void launch_masked_sums_ilp(const Layout& layout, const TileRef* d_tiles, const std::uint32_t* d_pixels,
                            const std::uint32_t* d_weights, std::size_t npix, int K, bool word_window,
                            unsigned long long* out, int* error, cudaStream_t stream);

}  // namespace qgpu::encoded::cuda::detail
