#pragma once
// The CUDA gather shared by the SSB and parallax engines: for groups g0 .. g0 + count of detector pixels
// (pixels[offsets[g] .. offsets[g + 1]) ), the summed values at every scan position as float (exact uint64 / int64
// sums of integers, float64 sums of floats, before the cast), written to out[g - g0][row][col] with row stride `row_stride` floats and `slab` floats per
// group (parallax: row_stride = scan_cols, slab = scan positions; SSB: the padded rows of its R2C transform).
// From dense frames (through a kGatherTile x kGatherTile shared tile, block kGatherTile x kGatherTileRows) or from
// pixel-major counts px[k - k_lo][scan] (an encoded resident's pixels decoded by decode_pixels, whole or in chunks).
#include <cstddef>
#include <cstdint>

#include "core/dtype.hpp"

namespace qgpu::detector::cuda {

constexpr int kGatherTile = 32, kGatherTileRows = 8;

// out[g - g0][row][col] (row stride `row_stride` floats, slab `slab` floats) = sum of the group's pixels.
template <class T>
__global__ void gather_groups_kernel(const T* __restrict__ data, std::size_t frame_px,
                                     const std::uint32_t* __restrict__ offsets,
                                     const std::uint32_t* __restrict__ pixels, std::uint32_t g0,
                                     std::uint32_t count, std::size_t nscan, std::uint32_t scan_cols,
                                     std::size_t row_stride, std::size_t slab, float* __restrict__ out) {
  __shared__ float tile[kGatherTile][kGatherTile + 1];
  const std::size_t s0 = std::size_t(blockIdx.x) * kGatherTile;
  const std::uint32_t gl0 = blockIdx.y * kGatherTile;
  for (int j = threadIdx.y; j < kGatherTile; j += kGatherTileRows) {
    const std::size_t s = s0 + j;
    const std::uint32_t gl = gl0 + threadIdx.x;
    sum_t<T> v = 0;
    if (s < nscan && gl < count) {
      const T* frame = data + s * frame_px;
      for (std::uint32_t k = offsets[g0 + gl]; k < offsets[g0 + gl + 1]; ++k) v += sum_t<T>(frame[pixels[k]]);
    }
    tile[j][threadIdx.x] = float(v);
  }
  __syncthreads();
  for (int j = threadIdx.y; j < kGatherTile; j += kGatherTileRows) {
    const std::uint32_t gl = gl0 + j;
    const std::size_t s = s0 + threadIdx.x;
    if (gl < count && s < nscan) out[gl * slab + (s / scan_cols) * row_stride + s % scan_cols] = tile[threadIdx.x][j];
  }
}

// The same gather from pixel-major counts (an encoded dataset's BF-disk pixels decoded by
// encoded::cuda::decode_pixels): px[k - k_lo][scan] holds the pixels k in [k_lo, k_hi) of the flat CSR pixel list,
// one thread per (group, scan position), same integer sums, same float rounding. A decode chunk may hold part of
// a group (callers bound the px buffer, see ssb_cuda.cu): each group sums its pixels inside [k_lo, k_hi); a group
// whose first pixel lies before k_lo adds its partial sum to out instead of writing it (exact, and so equal to the
// one-chunk result, while the group's counts per frame stay below 2^24).
template <class T>
__global__ void gather_groups_pixel_major_kernel(const T* __restrict__ px, std::size_t nscan,
                                                 const std::uint32_t* __restrict__ offsets, std::uint32_t g0,
                                                 std::uint32_t count, std::uint32_t k_lo, std::uint32_t k_hi,
                                                 std::uint32_t scan_cols, std::size_t row_stride, std::size_t slab,
                                                 float* __restrict__ out) {
  const std::size_t s = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (s >= nscan) return;
  for (std::uint32_t gl = blockIdx.y; gl < count; gl += gridDim.y) {
    const std::uint32_t first = offsets[g0 + gl], a = max(first, k_lo), b = min(offsets[g0 + gl + 1], k_hi);
    sum_t<T> v = 0;
    for (std::uint32_t k = a; k < b; ++k) v += sum_t<T>(px[std::size_t(k - k_lo) * nscan + s]);
    float* o = out + std::size_t(gl) * slab + (s / scan_cols) * row_stride + s % scan_cols;
    *o = a > first ? *o + float(v) : float(v);
  }
}

}  // namespace qgpu::detector::cuda
