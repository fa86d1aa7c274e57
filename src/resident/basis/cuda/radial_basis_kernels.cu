#include "resident/basis/cuda/radial_basis_kernels.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <climits>
#include <string>

#include "core/error.hpp"
#include "device/cuda/cuda_check.hpp"

namespace qgpu::basis::cuda {

namespace {

constexpr unsigned kThreads = 256;

// One block per frame (grid-stride over the batch): shared histograms [3][K] in uint64, then one thread per quantity
// prefix-sums its row and the block writes the K x 3 values with an overflow check.
template <class T>
__global__ void build_kernel(const T* frames, std::size_t first, std::size_t count, std::size_t frame_pixels,
                             std::size_t det_cols, const std::uint16_t* shell, std::uint32_t K, std::size_t total,
                             std::uint32_t* prefix, int* overflow) {
  extern __shared__ unsigned long long hist[];  // [3][K]
  for (std::size_t f = blockIdx.x; f < count; f += gridDim.x) {
    for (std::uint32_t i = threadIdx.x; i < 3 * K; i += blockDim.x) hist[i] = 0;
    __syncthreads();
    const T* frame = frames + f * frame_pixels;
    for (std::size_t p = threadIdx.x; p < frame_pixels; p += blockDim.x) {
      const unsigned long long v = frame[p];
      if (v == 0) continue;
      const std::uint32_t s = shell[p];
      const unsigned long long r = p / det_cols, c = p % det_cols;
      atomicAdd(&hist[s], v);
      atomicAdd(&hist[K + s], v * r);
      atomicAdd(&hist[2 * K + s], v * c);
    }
    __syncthreads();
    if (threadIdx.x < 3) {
      unsigned long long run = 0;
      for (std::uint32_t k = 0; k < K; ++k) {
        run += hist[threadIdx.x * K + k];
        hist[threadIdx.x * K + k] = run;
      }
    }
    __syncthreads();
    for (std::uint32_t i = threadIdx.x; i < 3 * K; i += blockDim.x) {
      const unsigned long long v = hist[i];
      if (v > 0xFFFFFFFFull) atomicExch(overflow, 1);
      prefix[std::size_t(i) * total + first + f] = static_cast<std::uint32_t>(v);  // [q][k] = i, then frame
    }
    __syncthreads();
  }
}

template <class T>
__global__ void sum_pattern_kernel(const T* frames, std::size_t count, std::size_t frame_pixels,
                                   unsigned long long* out) {
  const std::size_t p = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
  if (p >= frame_pixels) return;
  unsigned long long s = 0;
  for (std::size_t f = 0; f < count; ++f) s += frames[f * frame_pixels + p];
  out[p] = s;
}

// One thread per output value: the b x b scan positions of its block (b = 1: one position), each the ranges'
// prefix differences. Reads along scan columns are coalesced across the threads of a row of blocks for b = 1.
__global__ void range_sums_kernel(const std::uint32_t* prefix, std::size_t frames, std::size_t scan_cols,
                                  std::size_t bin, std::size_t out_cols, std::size_t outputs, RangeList ranges,
                                  unsigned long long* out) {
  const std::size_t o = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
  if (o >= outputs) return;
  const std::size_t r0 = (o / out_cols) * bin, c0 = (o % out_cols) * bin;
  unsigned long long s = 0;
  for (std::size_t dr = 0; dr < bin; ++dr)
    for (std::size_t dc = 0; dc < bin; ++dc) {
      const std::size_t f = (r0 + dr) * scan_cols + c0 + dc;
      for (int i = 0; i < ranges.n; ++i) {
        s += prefix[std::size_t(ranges.hi[i] - 1) * frames + f];
        if (ranges.lo[i] > 0) s -= prefix[std::size_t(ranges.lo[i] - 1) * frames + f];
      }
    }
  out[o] = s;
}

template <class F>
void by_dtype(DType dtype, F&& f) {
  switch (dtype) {
    case DType::u8: f(std::uint8_t{}); break;
    case DType::u16: f(std::uint16_t{}); break;
    case DType::u32: f(std::uint32_t{}); break;
    default: throw InvalidArgument("radial basis: counts of dtype " + dtype_name(dtype) + " (uint8/16/32 only)");
  }
}

}  // namespace

void build(const void* d_frames, DType dtype, std::size_t first, std::size_t count, std::size_t frame_pixels,
           std::size_t det_cols, const std::uint16_t* d_shell, std::uint32_t K, std::size_t frames,
           std::uint32_t* d_prefix, int* d_overflow, CUstream_st* stream) {
  if (count == 0) return;
  const auto blocks = static_cast<unsigned>(std::min<std::size_t>(count, 65535));
  const std::size_t shared = std::size_t(3) * K * sizeof(unsigned long long);
  by_dtype(dtype, [&](auto t) {
    using T = decltype(t);
    build_kernel<T><<<blocks, kThreads, shared, stream>>>(static_cast<const T*>(d_frames), first, count, frame_pixels,
                                                          det_cols, d_shell, K, frames, d_prefix, d_overflow);
  });
  QGPU_CUDA_LAUNCHED("radial basis build");
}

void sum_pattern(const void* d_frames, DType dtype, std::size_t count, std::size_t frame_pixels, std::uint64_t* d_out,
                 CUstream_st* stream) {
  const auto blocks = static_cast<unsigned>((frame_pixels + kThreads - 1) / kThreads);
  by_dtype(dtype, [&](auto t) {
    using T = decltype(t);
    sum_pattern_kernel<T><<<blocks, kThreads, 0, stream>>>(static_cast<const T*>(d_frames), count, frame_pixels,
                                                           reinterpret_cast<unsigned long long*>(d_out));
  });
  QGPU_CUDA_LAUNCHED("radial basis sum pattern");
}

void range_sums(const std::uint32_t* d_prefix_q, std::size_t scan_rows, std::size_t scan_cols, std::size_t scan_bin,
                const RangeList& ranges, std::uint64_t* d_out, CUstream_st* stream) {
  if (scan_bin == 0 || scan_rows % scan_bin || scan_cols % scan_bin)
    throw InvalidArgument("radial basis: scan bin " + std::to_string(scan_bin) + " does not divide the scan");
  const std::size_t outputs = (scan_rows / scan_bin) * (scan_cols / scan_bin);
  if ((outputs + kThreads - 1) / kThreads > std::size_t(INT_MAX)) throw InvalidArgument("radial basis: too many frames");
  const auto blocks = static_cast<unsigned>((outputs + kThreads - 1) / kThreads);
  range_sums_kernel<<<blocks, kThreads, 0, stream>>>(d_prefix_q, scan_rows * scan_cols, scan_cols, scan_bin,
                                                     scan_cols / scan_bin, outputs, ranges,
                                                     reinterpret_cast<unsigned long long*>(d_out));
  QGPU_CUDA_LAUNCHED("radial basis range sums");
}

}  // namespace qgpu::basis::cuda
