#pragma once
// CUDA kernels of the radial basis (resident/basis/radial_basis.hpp): the build over each loaded batch (up to 8
// frames per block step, shared-memory shell histograms; or together with the scan-binned copy's accumulation, one
// pass over the frames), the first batch's summed pattern and the range sums of a query.
#include <cstddef>
#include <cstdint>

#include "core/dtype.hpp"

struct CUstream_st;

namespace qgpu::basis::cuda {

inline constexpr int kMaxRanges = 8;
struct RangeList {
  int n = 0;
  std::uint32_t lo[kMaxRanges] = {}, hi[kMaxRanges] = {};  // shells [lo, hi)
};

// Frames [first, first + count) of frame_pixels native counts at d_frames: per frame the counts, det_row- and
// det_col-weighted sums per shell (d_shell: shell of each pixel, 0..K-1), prefix-summed over shells and written to
// d_prefix [q][k][frame] (3 x K x frames uint32). *d_overflow set to 1 when a value does not fit uint32.
void build(const void* d_frames, DType dtype, std::size_t first, std::size_t count, std::size_t frame_pixels,
           std::size_t det_cols, const std::uint16_t* d_shell, std::uint32_t K, std::size_t frames,
           std::uint32_t* d_prefix, int* d_overflow, CUstream_st* stream);
// The scan-binned copy's accumulator (resident/binned/scan_binned.hpp) for build_with_binned: binned rows
// [row0, ...) of scan_cols / bin frames of frame_pixels uint32 at acc, *overflow = 1 when a sum passes uint32.
struct BinnedAccumulator {
  std::size_t scan_cols = 0, bin = 0, row0 = 0;
  std::uint32_t* acc = nullptr;
  int* overflow = nullptr;
  // optional: each binned frame's sum of counts beside its values (uint64 per accumulator frame, written or added
  // as the values are): the copy's frame totals without another pass over the accumulator
  unsigned long long* totals = nullptr;
};
// Whether build_with_binned takes counts of `dtype` with K shells at `bin` (8/16-bit counts; the bin x bin frames'
// histograms within a block's default shared memory).
bool fits_with_binned(DType dtype, std::uint32_t K, std::size_t bin);
// build() of frames [first, first + count) and, in the same pass over them, binned::cuda::accumulate of the same
// frames into `a` (its rule: every binned row the frames touch must lie in the accumulator).
void build_with_binned(const void* d_frames, DType dtype, std::size_t first, std::size_t count,
                       std::size_t frame_pixels, std::size_t det_cols, const std::uint16_t* d_shell, std::uint32_t K,
                       std::size_t frames, std::uint32_t* d_prefix, int* d_overflow, const BinnedAccumulator& a,
                       CUstream_st* stream);
// Sum of `count` frames per pixel into d_out (frame_pixels uint64, zeroed here).
void sum_pattern(const void* d_frames, DType dtype, std::size_t count, std::size_t frame_pixels, std::uint64_t* d_out,
                 CUstream_st* stream);
// d_out[f] = sum over the ranges of P[hi-1][f] - P[lo-1][f] (P[-1] = 0) for one quantity's K x frames images
// (frames = scan_rows x scan_cols); scan_bin b > 1 (dividing both): summed over b x b blocks of positions as well,
// d_out holding (scan_rows / b) x (scan_cols / b) values.
void range_sums(const std::uint32_t* d_prefix_q, std::size_t scan_rows, std::size_t scan_cols, std::size_t scan_bin,
                const RangeList& ranges, std::uint64_t* d_out, CUstream_st* stream);

}  // namespace qgpu::basis::cuda
