#include "io/source/cuda/scatter_transposed.hpp"

#include <algorithm>
#include <string>

#include "core/error.hpp"
#include "device/cuda/cuda_check.hpp"
#include "io/source/frame_codec.hpp"

namespace qgpu::io::cuda {

namespace {

constexpr int kThreads = 256;

int grid_for(std::uint64_t items) {
  return int(std::max<std::uint64_t>(1, std::min<std::uint64_t>((items + kThreads - 1) / kThreads, 65535u * 16)));
}

// One thread per stored element, grid-stride: coalesced reads of the slab, scattered writes.
template <class U>
__global__ void copy_kernel(const std::uint8_t* slab, std::uint64_t first, std::uint64_t count, TransposedGeometry g,
                            U* out, const std::uint8_t* bad) {
  const U* in = reinterpret_cast<const U*>(slab);  // device allocations are aligned: element i at i * sizeof(U)
  for (std::uint64_t i = blockIdx.x * std::uint64_t(blockDim.x) + threadIdx.x; i < count;
       i += std::uint64_t(gridDim.x) * blockDim.x) {
    std::uint64_t o, px;
    if (!transposed_target(g, first + i, o, px)) continue;
    U v = in[i];
    if (g.swap) v = byte_swapped(v);
    out[o] = bad && bad[px] ? U(0) : v;
  }
}

template <class T>
__global__ void bin_kernel(const std::uint8_t* slab, std::uint64_t first, std::uint64_t count, TransposedGeometry g,
                           unsigned int* out, const std::uint8_t* bad, int* overflow) {
  const T* in = reinterpret_cast<const T*>(slab);
  for (std::uint64_t i = blockIdx.x * std::uint64_t(blockDim.x) + threadIdx.x; i < count;
       i += std::uint64_t(gridDim.x) * blockDim.x) {
    std::uint64_t o, px;
    if (!transposed_target(g, first + i, o, px) || (bad && bad[px])) continue;
    T v = in[i];
    if (g.swap) v = byte_swapped(v);
    if (v == 0) continue;
    const unsigned int old = atomicAdd(out + o, (unsigned int)v);
    if ((unsigned int)(old + (unsigned int)v) < old) *overflow = 1;  // this add passed UINT32_MAX
  }
}

}  // namespace

void scatter_transposed(const std::uint8_t* d_slab, std::uint64_t first, std::uint64_t count,
                        const TransposedGeometry& g, DType dtype, bool binned, void* d_out, const std::uint8_t* d_bad,
                        int* d_overflow, cudaStream_t stream) {
  if (count == 0) return;
  const int grid = grid_for(count);
  if (binned) {
    dispatch_count_dtype(dtype, [&](auto t) {
      using T = decltype(t);
      bin_kernel<T><<<grid, kThreads, 0, stream>>>(d_slab, first, count, g, static_cast<unsigned int*>(d_out), d_bad,
                                                   d_overflow);
    });
  } else {
    auto launch = [&](auto u) {
      using U = decltype(u);
      copy_kernel<U><<<grid, kThreads, 0, stream>>>(d_slab, first, count, g, static_cast<U*>(d_out), d_bad);
    };
    switch (g.elem_size) {
      case 1: launch(std::uint8_t{}); break;
      case 2: launch(std::uint16_t{}); break;
      case 4: launch(std::uint32_t{}); break;
      case 8: launch(std::uint64_t{}); break;
      default: throw DTypeError("elements of " + std::to_string(g.elem_size) + " bytes: expected 1, 2, 4 or 8");
    }
  }
  QGPU_CUDA(cudaGetLastError());
}

}  // namespace qgpu::io::cuda
