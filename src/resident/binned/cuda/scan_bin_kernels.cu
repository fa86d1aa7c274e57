#include "resident/binned/cuda/scan_bin_kernels.hpp"

#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "core/error.hpp"
#include "device/cuda/buffer_pool.hpp"
#include "device/cuda/cuda_check.hpp"
#include "resident/binned/cuda/binned_store.cuh"

namespace qgpu::binned::cuda {

namespace {

constexpr unsigned kThreads = 256;

template <class T, int V> struct Vec;
template <class T> struct Vec<T, 1> { T v[1]; };
template <> struct alignas(4) Vec<std::uint8_t, 4> { std::uint8_t v[4]; };
template <> struct alignas(8) Vec<std::uint16_t, 4> { std::uint16_t v[4]; };
template <> struct alignas(16) Vec<std::uint32_t, 4> { std::uint32_t v[4]; };

// One thread per (binned frame, V consecutive pixels): x the pixel vectors, y the binned frames of the rows
// [r_lo, r_hi] the range touches (grid-stride; a block's frame and its row and column are the same for all its
// threads: no division per thread); each reads its b x b inputs that lie in [first, end) as V-wide loads (one warp:
// 32 V consecutive pixels).
template <class T, int V>
__global__ void accumulate_kernel(const T* frames, std::size_t first, std::size_t end, std::size_t cols,
                                  std::size_t b, std::size_t vecs, std::size_t r_lo, std::size_t row0,
                                  std::size_t binned_frames, std::uint32_t* acc, int* overflow) {
  const std::size_t ocols = cols / b, P = vecs * V;
  const std::size_t pv = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
  if (pv >= vecs) return;
  for (std::size_t o = blockIdx.y; o < binned_frames; o += gridDim.y) {
    const std::size_t R = r_lo + o / ocols, C = o % ocols;
    unsigned long long s[V] = {};
    bool any = false;
    for (std::size_t dr = 0; dr < b; ++dr) {
      const std::size_t g_row = (R * b + dr) * cols + C * b;
      if (g_row + b <= first || g_row >= end) continue;
      for (std::size_t dc = 0; dc < b; ++dc) {
        const std::size_t g = g_row + dc;
        if (g < first || g >= end) continue;
        any = true;
        const Vec<T, V> x = *reinterpret_cast<const Vec<T, V>*>(frames + (g - first) * P + pv * V);
#pragma unroll
        for (int k = 0; k < V; ++k) s[k] += x.v[k];
      }
    }
    if (!any) continue;
    store_binned_sums<V>(acc + ((R - row0) * ocols + C) * P + pv * V, s, (R * b) * cols + C * b >= first, overflow);
  }
}

__global__ void totals_differ_kernel(const unsigned long long* full, std::size_t cols, std::size_t b,
                                     std::size_t ocols, std::size_t outputs, const unsigned long long* binned,
                                     int* differ) {
  const std::size_t o = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
  if (o >= outputs) return;
  const std::size_t r0 = o / ocols * b, c0 = o % ocols * b;
  unsigned long long s = 0;
  for (std::size_t dr = 0; dr < b; ++dr)
    for (std::size_t dc = 0; dc < b; ++dc) s += full[(r0 + dr) * cols + c0 + dc];
  if (s != binned[o]) atomicExch(differ, 1);
}

template <class T>
void launch(const void* d_frames, std::size_t first, std::size_t end, std::size_t cols, std::size_t b,
            std::size_t P, std::size_t row0, std::uint32_t* acc, int* overflow, cudaStream_t s) {
  const std::size_t rowlen = cols * b, r_lo = first / rowlen, r_hi = (end - 1) / rowlen;
  const std::size_t frames = (r_hi - r_lo + 1) * (cols / b);
  const bool vec = P % 4 == 0 && reinterpret_cast<std::uintptr_t>(d_frames) % (4 * sizeof(T)) == 0;
  const std::size_t vecs = vec ? P / 4 : P;
  if ((vecs + kThreads - 1) / kThreads > 0x7FFFFFFFu) throw InvalidArgument("scan-binned copy: frames too large");
  const dim3 grid(unsigned((vecs + kThreads - 1) / kThreads), unsigned(std::min<std::size_t>(frames, 65535)));
  if (vec)
    accumulate_kernel<T, 4><<<grid, kThreads, 0, s>>>(static_cast<const T*>(d_frames), first, end, cols, b, vecs,
                                                      r_lo, row0, frames, acc, overflow);
  else
    accumulate_kernel<T, 1><<<grid, kThreads, 0, s>>>(static_cast<const T*>(d_frames), first, end, cols, b, vecs,
                                                      r_lo, row0, frames, acc, overflow);
  QGPU_CUDA(cudaGetLastError());
}

}  // namespace

void accumulate(const void* d_frames, DType dtype, std::size_t first, std::size_t end, std::size_t scan_cols,
                std::size_t b, std::size_t frame_pixels, std::size_t row0, std::uint32_t* d_acc, int* d_overflow,
                CUstream_st* stream) {
  if (end <= first) return;
  switch (dtype) {
    case DType::u8: launch<std::uint8_t>(d_frames, first, end, scan_cols, b, frame_pixels, row0, d_acc, d_overflow, stream); break;
    case DType::u16: launch<std::uint16_t>(d_frames, first, end, scan_cols, b, frame_pixels, row0, d_acc, d_overflow, stream); break;
    case DType::u32: launch<std::uint32_t>(d_frames, first, end, scan_cols, b, frame_pixels, row0, d_acc, d_overflow, stream); break;
    default: throw InvalidArgument("scan-binned copy: counts of dtype " + dtype_name(dtype) + " (uint8/16/32 only)");
  }
}

bool binned_totals_equal(const std::uint64_t* d_full, std::size_t scan_rows, std::size_t scan_cols, std::size_t b,
                         const std::uint64_t* d_binned, CUstream_st* stream) {
  if (b == 0 || scan_rows % b || scan_cols % b)
    throw InvalidArgument("scan-binned copy: bin " + std::to_string(b) + " does not divide the scan");
  const std::size_t outputs = (scan_rows / b) * (scan_cols / b);
  if (outputs == 0) return true;
  LeasedBuffer flag(sizeof(int));
  int* const d_differ = flag.as<int>();
  QGPU_CUDA(cudaMemsetAsync(d_differ, 0, sizeof(int), stream));
  const auto blocks = static_cast<unsigned>((outputs + kThreads - 1) / kThreads);
  totals_differ_kernel<<<blocks, kThreads, 0, stream>>>(reinterpret_cast<const unsigned long long*>(d_full),
                                                         scan_cols, b, scan_cols / b, outputs,
                                                         reinterpret_cast<const unsigned long long*>(d_binned),
                                                         d_differ);
  QGPU_CUDA_LAUNCHED("scan-binned copy totals check");
  int differ = 0;
  QGPU_CUDA(cudaMemcpyAsync(&differ, d_differ, sizeof(int), cudaMemcpyDeviceToHost, stream));
  QGPU_CUDA(cudaStreamSynchronize(stream));
  return differ == 0;
}

}  // namespace qgpu::binned::cuda
