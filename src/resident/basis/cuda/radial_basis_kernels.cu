#include "resident/basis/cuda/radial_basis_kernels.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <string>
#include <type_traits>

#include "core/error.hpp"
#include "device/cuda/cuda_check.hpp"
#include "resident/binned/cuda/binned_store.cuh"

namespace qgpu::basis::cuda {

namespace {

constexpr unsigned kThreads = 256;
constexpr std::size_t kFramesPerGroup = 8;    // frames per block step of the build (32-byte writes per boundary)
constexpr std::size_t kHistBytes = 48 * 1024;  // the default dynamic shared memory of a block
constexpr std::size_t kWarpTotalsBytes = kThreads / 32 * sizeof(unsigned long long);  // build_binned_kernel's static

// Histogram adds. H = uint32 (uint8/16 counts): an add that wraps sets *overflow (the shell's sum, and so the prefix
// through it, exceeds uint32: the basis is dropped, as when a prefix does); H = uint64 (uint32 counts): no wrap.
__device__ inline void hist_add(std::uint32_t* h, unsigned long long x, int* overflow) {
  if (x > 0xFFFFFFFFull) { atomicExch(overflow, 1); return; }
  const std::uint32_t old = atomicAdd(h, static_cast<std::uint32_t>(x));
  if (old + static_cast<std::uint32_t>(x) < old) atomicExch(overflow, 1);
}
__device__ inline void hist_add(unsigned long long* h, unsigned long long x, int*) { atomicAdd(h, x); }

// One warp prefix-sums a row of K histogram values in place: lane l scans its run [l n, l n + n), then the runs'
// totals across lanes; a prefix beyond uint32 sets *overflow.
template <class H>
__device__ void scan_row(H* h, std::uint32_t K, unsigned lane, int* overflow) {
  const std::uint32_t per = (K + 31) / 32;
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

template <class T, int V> struct alignas(sizeof(T) * V) Pixels { T v[V]; };

// Up to kFramesPerGroup frames per block step (grid-stride over the batch's groups): each thread takes V consecutive
// pixels (their shells, rows and columns computed once) across the group's frames into shared histograms
// [frame][3][K]: the group's V-wide loads are all issued before the first add (independent loads in flight, not one
// load's latency per frame); one warp per row prefix-sums it over the shells (a warp scan, checked against uint32);
// the group's values are written frame-fastest, so that the values of one boundary for its consecutive frames are one
// contiguous write.
template <class T, class H, int V>
__global__ void build_kernel(const T* __restrict__ frames, std::size_t first, std::size_t count,
                             std::uint32_t frame_pixels, std::uint32_t det_cols,
                             const std::uint16_t* __restrict__ shell, std::uint32_t K, std::size_t total,
                             std::uint32_t group, std::uint32_t* __restrict__ prefix, int* overflow) {
  extern __shared__ __align__(16) unsigned char smem[];
  H* hist = reinterpret_cast<H*>(smem);  // [group][3][K] (all of the block's 48 KiB at K = kMaxBoundaries)
  const std::uint32_t row_len = 3 * K, vecs = frame_pixels / V;
  const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  for (std::size_t f0 = std::size_t(blockIdx.x) * group; f0 < count; f0 += std::size_t(gridDim.x) * group) {
    const auto nf = static_cast<std::uint32_t>(count - f0 < group ? count - f0 : group);
    for (std::uint32_t i = threadIdx.x; i < nf * row_len; i += blockDim.x) hist[i] = 0;
    __syncthreads();
    const T* base = frames + f0 * frame_pixels;
    for (std::uint32_t g = threadIdx.x; g < vecs; g += blockDim.x) {
      const std::uint32_t p0 = g * V;
      Pixels<T, V> x[kFramesPerGroup];
#pragma unroll
      for (std::uint32_t fi = 0; fi < kFramesPerGroup; ++fi)
        if (fi < nf) x[fi] = *reinterpret_cast<const Pixels<T, V>*>(base + std::size_t(fi) * frame_pixels + p0);
#pragma unroll
      for (int k = 0; k < V; ++k) {
        const std::uint32_t p = p0 + k, s = shell[p], r = p / det_cols, c = p - r * det_cols;
#pragma unroll
        for (std::uint32_t fi = 0; fi < kFramesPerGroup; ++fi) {
          if (fi >= nf) break;
          const unsigned long long v = x[fi].v[k];
          if (v == 0) continue;
          H* h = hist + fi * row_len;
          hist_add(h + s, v, overflow);
          hist_add(h + K + s, v * r, overflow);
          hist_add(h + 2 * K + s, v * c, overflow);
        }
      }
    }
    __syncthreads();
    for (std::uint32_t row = warp; row < 3 * nf; row += warps) scan_row(hist + row * K, K, lane, overflow);
    __syncthreads();
    for (std::uint32_t i = threadIdx.x; i < nf * row_len; i += blockDim.x) {
      const std::uint32_t fi = i % nf, q = i / nf;  // q: quantity x K + boundary
      prefix[std::size_t(q) * total + first + f0 + fi] = static_cast<std::uint32_t>(hist[fi * row_len + q]);
    }
    __syncthreads();
  }
}

// The build of a batch's frames [first, end) and, in the same pass, the scan-binned copy's accumulation
// (resident/binned: binned::cuda::accumulate's rule): one block step per binned frame (R, C) of the binned rows the
// batch touches, over those of its b x b frames (slot dr b + dc) that lie in the batch. Each thread takes V pixels
// across them: their counts into the slots' shell histograms (8/16-bit counts: uint32 adds, unchecked where the
// binned frame's total bounds every value, else again with each add checked) and their
// sum into the accumulator (binned::cuda::store_binned_sums); then each frame's histograms are prefix-summed and
// written as build_kernel does. (One shared add per run of a thread's pixels in the same shell instead of per pixel
// measured slower: 2048^2 load with basis + copy 1587-1654 against 1458-1490 ms, s31d; issuing the loads of 8 of the
// b x b frames before their adds, not a row's up to 4, was not faster: 4096^2 4533-4715 against 4468-4559 ms, s32a;
// the unchecked adds: 4367-4462 against 4519-4581 ms with every add checked, s34a.)
template <class T, int V>
__global__ void __launch_bounds__(kThreads, 4) build_binned_kernel(const T* __restrict__ frames, std::size_t first, std::size_t end,
                                    std::uint32_t frame_pixels, std::uint32_t det_cols,
                                    const std::uint16_t* __restrict__ shell, std::uint32_t K, std::size_t total,
                                    std::uint32_t* __restrict__ prefix, int* overflow, std::size_t cols,
                                    std::uint32_t b, std::size_t r_lo, std::size_t row0, std::size_t binned_frames,
                                    std::uint32_t* __restrict__ acc, int* acc_overflow,
                                    unsigned long long* __restrict__ acc_totals) {
  extern __shared__ __align__(16) unsigned char smem[];
  __shared__ unsigned long long warp_totals[kThreads / 32];
  std::uint32_t* hist = reinterpret_cast<std::uint32_t*>(smem);  // [b x b][3][K]
  const std::uint32_t row_len = 3 * K, vecs = frame_pixels / V, slots = b * b;
  const std::size_t ocols = cols / b;
  const std::uint32_t det_rows = frame_pixels / det_cols,
                      max_coord = std::max(std::max(det_rows, det_cols), 2u) - 1;  // the largest det row or col, >= 1
  const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  const auto in_batch = [&](std::size_t g) { return g >= first && g < end; };
  for (std::size_t o = blockIdx.x; o < binned_frames; o += gridDim.x) {
    const std::size_t R = r_lo + o / ocols, C = o % ocols, g00 = R * b * cols + C * b;
    bool any = false;  // the same for every thread of the block
    for (std::uint32_t dr = 0; dr < b; ++dr) any |= g00 + dr * cols + b > first && g00 + dr * cols < end;
    if (!any) continue;
    for (std::uint32_t i = threadIdx.x; i < slots * row_len; i += blockDim.x) hist[i] = 0;
    __syncthreads();
    const bool fresh = g00 >= first;
    // The frames' counts into the slots' histograms: unchecked 32-bit adds where the binned frame's total bounds
    // every value (below), else (Checked) each add checked against uint32 as build_kernel does.
    const auto histogram = [&](auto checked, bool store) -> unsigned long long {
      constexpr bool Checked = decltype(checked)::value;
      unsigned long long mine = 0;  // this thread's part of the binned frame's total
      for (std::uint32_t g = threadIdx.x; g < vecs; g += blockDim.x) {
        const std::uint32_t p0 = g * V;
        std::uint32_t s[V], r[V], c[V];
#pragma unroll
        for (int k = 0; k < V; ++k) {
          s[k] = shell[p0 + k];
          r[k] = (p0 + k) / det_cols;
          c[k] = p0 + k - r[k] * det_cols;
        }
        unsigned long long sum[V] = {};
        for (std::uint32_t dr = 0; dr < b; ++dr) {
          const std::size_t row = g00 + dr * cols;
          const std::size_t lo = row > first ? row : first, hi = row + b < end ? row + b : end;
          for (std::size_t f = lo; f < hi; f += 4) {  // up to four frames' loads in flight before their adds
            const std::uint32_t n = hi - f < 4 ? static_cast<std::uint32_t>(hi - f) : 4u;
            Pixels<T, V> x[4];
#pragma unroll
            for (std::uint32_t j = 0; j < 4; ++j)
              if (j < n) x[j] = *reinterpret_cast<const Pixels<T, V>*>(frames + (f + j - first) * frame_pixels + p0);
#pragma unroll
            for (std::uint32_t j = 0; j < 4; ++j) {
              if (j >= n) break;
              std::uint32_t* h = hist + (dr * b + static_cast<std::uint32_t>(f + j - row)) * row_len;
#pragma unroll
              for (int k = 0; k < V; ++k) {
                const std::uint32_t v = x[j].v[k];
                sum[k] += v;
                if (v == 0) continue;
                if constexpr (Checked) {
                  hist_add(h + s[k], v, overflow);
                  hist_add(h + K + s[k], static_cast<unsigned long long>(v) * r[k], overflow);
                  hist_add(h + 2 * K + s[k], static_cast<unsigned long long>(v) * c[k], overflow);
                } else {  // no add or product wraps where the bound below holds
                  atomicAdd(h + s[k], v);
                  atomicAdd(h + K + s[k], v * r[k]);
                  atomicAdd(h + 2 * K + s[k], v * c[k]);
                }
              }
            }
          }
        }
#pragma unroll
        for (int k = 0; k < V; ++k) mine += sum[k];
        if (store)
          binned::cuda::store_binned_sums<V>(acc + ((R - row0) * ocols + C) * frame_pixels + p0, sum, fresh,
                                             acc_overflow);
      }
      return mine;
    };
    unsigned long long mine = histogram(std::false_type{}, true);
    for (int o2 = 16; o2 > 0; o2 >>= 1) mine += __shfl_down_sync(0xffffffffu, mine, o2);
    if (lane == 0) warp_totals[warp] = mine;
    __syncthreads();
    unsigned long long sum = 0;  // the binned frame's total over its frames in the batch
    for (unsigned w = 0; w < warps; ++w) sum += warp_totals[w];
    if (acc_totals && threadIdx.x == 0) {  // one block per binned frame in a launch: no other writer
      unsigned long long* d = acc_totals + (R - row0) * ocols + C;
      *d = fresh ? sum : *d + sum;
    }
    // Every histogram value and prefix of a frame is at most its total times the largest det row / col, and a
    // frame's total at most sum: within uint32, the unchecked adds were exact. Else the histograms again, checked.
    if (sum > 0xFFFFFFFFull / max_coord) {
      __syncthreads();
      for (std::uint32_t i = threadIdx.x; i < slots * row_len; i += blockDim.x) hist[i] = 0;
      __syncthreads();
      histogram(std::true_type{}, false);
    }
    __syncthreads();
    for (std::uint32_t row = warp; row < 3 * slots; row += warps) {
      const std::uint32_t slot = row / 3;
      if (in_batch(g00 + (slot / b) * cols + slot % b)) scan_row(hist + row * K, K, lane, overflow);
    }
    __syncthreads();
    for (std::uint32_t i = threadIdx.x; i < slots * row_len; i += blockDim.x) {  // (dr, quantity x K + k, dc)
      const std::uint32_t dc = i % b, t = i / b, q = t % row_len, dr = t / row_len;
      const std::size_t f = g00 + dr * cols + dc;
      if (in_batch(f)) prefix[std::size_t(q) * total + f] = hist[(dr * b + dc) * row_len + q];
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
    // 4 pixels per load where every frame of the batch starts 4-pixel aligned
    const bool vec = frame_pixels % 4 == 0 && reinterpret_cast<std::uintptr_t>(d_frames) % (4 * sizeof(T)) == 0;
    const auto kernel = vec ? build_kernel<T, H, 4> : build_kernel<T, H, 1>;
    kernel<<<blocks, kThreads, shared, stream>>>(static_cast<const T*>(d_frames), first, count,
                                                 static_cast<std::uint32_t>(frame_pixels),
                                                 static_cast<std::uint32_t>(det_cols), d_shell, K, frames, group,
                                                 d_prefix, d_overflow);
  });
  QGPU_CUDA_LAUNCHED("radial basis build");
}

bool fits_with_binned(DType dtype, std::uint32_t K, std::size_t bin) {
  return (dtype == DType::u8 || dtype == DType::u16) && K > 0 && bin >= 2 && bin <= 16 &&
         bin * bin * 3 * std::size_t(K) * sizeof(std::uint32_t) <= kHistBytes - kWarpTotalsBytes;
}

void build_with_binned(const void* d_frames, DType dtype, std::size_t first, std::size_t count,
                       std::size_t frame_pixels, std::size_t det_cols, const std::uint16_t* d_shell, std::uint32_t K,
                       std::size_t frames, std::uint32_t* d_prefix, int* d_overflow, const BinnedAccumulator& a,
                       CUstream_st* stream) {
  if (count == 0) return;
  if (!fits_with_binned(dtype, K, a.bin) || frame_pixels > UINT_MAX || det_cols == 0 || a.scan_cols % a.bin)
    throw InvalidArgument("radial basis with the scan-binned copy: " + std::to_string(K) + " shells at bin " +
                          std::to_string(a.bin));
  const std::size_t end = first + count, rowlen = a.scan_cols * a.bin, r_lo = first / rowlen,
                    r_hi = (end - 1) / rowlen, binned_frames = (r_hi - r_lo + 1) * (a.scan_cols / a.bin);
  const std::size_t shared = a.bin * a.bin * 3 * std::size_t(K) * sizeof(std::uint32_t);
  const auto blocks = static_cast<unsigned>(std::min<std::size_t>(binned_frames, 65535));
  const auto launch = [&](auto t) {
    using T = decltype(t);
    // 4 pixels per load where every frame starts 4-pixel aligned (the accumulator's frames then are too)
    const bool vec = frame_pixels % 4 == 0 && reinterpret_cast<std::uintptr_t>(d_frames) % (4 * sizeof(T)) == 0 &&
                     reinterpret_cast<std::uintptr_t>(a.acc) % 16 == 0;
    const auto kernel = vec ? build_binned_kernel<T, 4> : build_binned_kernel<T, 1>;
    kernel<<<blocks, kThreads, shared, stream>>>(static_cast<const T*>(d_frames), first, end,
                                                 static_cast<std::uint32_t>(frame_pixels),
                                                 static_cast<std::uint32_t>(det_cols), d_shell, K, frames, d_prefix,
                                                 d_overflow, a.scan_cols, static_cast<std::uint32_t>(a.bin), r_lo,
                                                 a.row0, binned_frames, a.acc, a.overflow, a.totals);
  };
  if (dtype == DType::u8) launch(std::uint8_t{});
  else launch(std::uint16_t{});
  QGPU_CUDA_LAUNCHED("radial basis build with the scan-binned copy");
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
