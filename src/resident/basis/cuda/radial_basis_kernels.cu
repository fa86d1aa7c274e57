#include "resident/basis/cuda/radial_basis_kernels.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <climits>
#include <string>
#include <type_traits>

#include "core/error.hpp"
#include "device/cuda/cuda_check.hpp"

namespace qgpu::basis::cuda {

namespace {

constexpr unsigned kThreads = 256;
constexpr std::size_t kFramesPerGroup = 8;    // frames per block step of the build (32-byte writes per boundary)
constexpr std::size_t kHistBytes = 48 * 1024;  // the default dynamic shared memory of a block

// Histogram adds. H = uint32 (uint8/16 counts): an add that wraps sets *overflow (the shell's sum, and so the prefix
// through it, exceeds uint32: the basis is dropped, as when a prefix does); H = uint64 (uint32 counts): no wrap.
__device__ inline void hist_add(std::uint32_t* h, unsigned long long x, int* overflow) {
  if (x > 0xFFFFFFFFull) { atomicExch(overflow, 1); return; }
  const std::uint32_t old = atomicAdd(h, static_cast<std::uint32_t>(x));
  if (old + static_cast<std::uint32_t>(x) < old) atomicExch(overflow, 1);
}
__device__ inline void hist_add(unsigned long long* h, unsigned long long x, int*) { atomicAdd(h, x); }

// Up to kFramesPerGroup frames per block step (grid-stride over the batch's groups): each thread takes pixels p
// (their shell, row and column computed once) across the group's frames into shared histograms [frame][3][K]; one
// warp per row prefix-sums it over the shells (a warp scan, checked against uint32); the group's values are written
// frame-fastest, so that the values of one boundary for its consecutive frames are one contiguous write.
template <class T, class H>
__global__ void build_kernel(const T* frames, std::size_t first, std::size_t count, std::uint32_t frame_pixels,
                             std::uint32_t det_cols, const std::uint16_t* shell, std::uint32_t K, std::size_t total,
                             std::uint32_t group, std::uint32_t* prefix, int* overflow) {
  extern __shared__ __align__(16) unsigned char smem[];
  H* hist = reinterpret_cast<H*>(smem);  // [group][3][K] (all of the block's 48 KiB at K = kMaxBoundaries)
  const std::uint32_t row_len = 3 * K;
  const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  for (std::size_t f0 = std::size_t(blockIdx.x) * group; f0 < count; f0 += std::size_t(gridDim.x) * group) {
    const auto nf = static_cast<std::uint32_t>(count - f0 < group ? count - f0 : group);
    for (std::uint32_t i = threadIdx.x; i < nf * row_len; i += blockDim.x) hist[i] = 0;
    __syncthreads();
    const T* base = frames + f0 * frame_pixels;
    for (std::uint32_t p = threadIdx.x; p < frame_pixels; p += blockDim.x) {
      const std::uint32_t s = shell[p], r = p / det_cols, c = p - r * det_cols;
      for (std::uint32_t fi = 0; fi < nf; ++fi) {
        const unsigned long long v = base[std::size_t(fi) * frame_pixels + p];
        if (v == 0) continue;
        H* h = hist + fi * row_len;
        hist_add(h + s, v, overflow);
        hist_add(h + K + s, v * r, overflow);
        hist_add(h + 2 * K + s, v * c, overflow);
      }
    }
    __syncthreads();
    // rows (frame, quantity) of K values: lane l scans its run [l n, l n + n), then the runs' totals across lanes
    const std::uint32_t per = (K + 31) / 32;
    for (std::uint32_t row = warp; row < 3 * nf; row += warps) {
      H* h = hist + row * K;
      const std::uint32_t lo = lane * per < K ? lane * per : K, hi = lo + per < K ? lo + per : K;
      unsigned long long run = 0;
      for (std::uint32_t k = lo; k < hi; ++k) run += h[k];
      unsigned long long before = run;  // inclusive scan of the runs' totals, then exclusive
      for (int o = 1; o < 32; o <<= 1) {
        const unsigned long long t = __shfl_up_sync(0xffffffffu, before, o);
        if (lane >= unsigned(o)) before += t;
      }
      before -= run;
      bool over = false;
      for (std::uint32_t k = lo; k < hi; ++k) {
        before += h[k];
        over |= before > 0xFFFFFFFFull;
        h[k] = static_cast<H>(static_cast<std::uint32_t>(before));
      }
      if (over) atomicExch(overflow, 1);
    }
    __syncthreads();
    for (std::uint32_t i = threadIdx.x; i < nf * row_len; i += blockDim.x) {
      const std::uint32_t fi = i % nf, q = i / nf;  // q: quantity x K + boundary
      prefix[std::size_t(q) * total + first + f0 + fi] = static_cast<std::uint32_t>(hist[fi * row_len + q]);
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
  if (frame_pixels > UINT_MAX || det_cols == 0 || K == 0)
    throw InvalidArgument("radial basis: frames of " + std::to_string(frame_pixels) + " pixels, " +
                          std::to_string(K) + " shells");
  by_dtype(dtype, [&](auto t) {
    using T = decltype(t);
    using H = std::conditional_t<sizeof(T) < 4, std::uint32_t, unsigned long long>;
    const std::size_t per_frame = std::size_t(3) * K * sizeof(H);  // <= 48 KiB at K = kMaxBoundaries
    const auto group = static_cast<std::uint32_t>(std::clamp<std::size_t>(kHistBytes / per_frame, 1, kFramesPerGroup));
    const std::size_t shared = group * per_frame;
    if (shared > kHistBytes) throw InvalidArgument("radial basis: " + std::to_string(K) + " shells");
    const auto blocks = static_cast<unsigned>(std::min<std::size_t>((count + group - 1) / group, 65535));
    build_kernel<T, H><<<blocks, kThreads, shared, stream>>>(
        static_cast<const T*>(d_frames), first, count, static_cast<std::uint32_t>(frame_pixels),
        static_cast<std::uint32_t>(det_cols), d_shell, K, frames, group, d_prefix, d_overflow);
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
