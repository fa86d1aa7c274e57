#pragma once
// The scan-binned copy's accumulator store, shared by its accumulation kernel (scan_bin_kernels.cu) and the radial
// basis build that takes the accumulation in the same pass (basis/cuda/radial_basis_kernels.cu).
#include <cstdint>

namespace qgpu::binned::cuda {

template <int V> struct alignas(4 * V) BinnedSums { std::uint32_t v[V]; };

// V consecutive values of one binned frame at dst: the sums s, onto what is there unless `fresh` (the binned frame's
// first input is in this batch); a value beyond uint32 sets *overflow.
template <int V>
__device__ inline void store_binned_sums(std::uint32_t* dst, const unsigned long long (&s)[V], bool fresh,
                                         int* overflow) {
  BinnedSums<V>* d = reinterpret_cast<BinnedSums<V>*>(dst);
  BinnedSums<V> w;
  if (!fresh) w = *d;
  bool over = false;
#pragma unroll
  for (int k = 0; k < V; ++k) {
    const unsigned long long t = s[k] + (fresh ? 0ull : w.v[k]);
    over |= t > 0xFFFFFFFFull;
    w.v[k] = static_cast<std::uint32_t>(t);
  }
  if (over) atomicExch(overflow, 1);
  *d = w;
}

}  // namespace qgpu::binned::cuda
