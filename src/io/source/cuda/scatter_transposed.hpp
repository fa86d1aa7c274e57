#pragma once
// GPU scatter of a slab of a transposed file (io/source/transposed_layout.hpp) into the resident layout: the twin
// of scatter_transposed_host (io/source/load_transposed.hpp), with the same element mapping (transposed_target).
#include <cuda_runtime.h>

#include <cstdint>

#include "core/dtype.hpp"
#include "io/source/transposed_layout.hpp"

namespace qgpu::io::cuda {

// d_slab: the stored elements [first, first + count) as stored (device memory). Unbinned: d_out holds elements of
// g.elem_size bytes (1, 2, 4 or 8; bytes copied, swapped when g.swap), bad pixels written 0. Binned: `dtype` (a count
// dtype) is read and added to the uint32 sums in d_out (zeroed by the caller), bad pixels skipped; a sum passing
// UINT32_MAX sets *d_overflow to 1. d_bad: one byte per stored detector pixel (1 = bad) or null. Enqueued on stream.
void scatter_transposed(const std::uint8_t* d_slab, std::uint64_t first, std::uint64_t count,
                        const TransposedGeometry& g, DType dtype, bool binned, void* d_out, const std::uint8_t* d_bad,
                        int* d_overflow, cudaStream_t stream);

}  // namespace qgpu::io::cuda
