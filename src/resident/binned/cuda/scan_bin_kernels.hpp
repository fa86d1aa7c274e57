#pragma once
// CUDA kernel of the scan-binned copy (resident/binned/scan_binned.hpp): frames added into the b x b block sums of
// the binned rows held in an accumulator.
#include <cstddef>
#include <cstdint>

#include "core/dtype.hpp"

struct CUstream_st;

namespace qgpu::binned::cuda {

// Frames [first, end) in flat scan order of a scan_cols-wide scan (d_frames: frame `first` first, frame_pixels native
// counts each) added into the binned frames of binned rows [row0, row0 + rows) at d_acc (rows x (scan_cols / b)
// frames of frame_pixels uint32): binned frame (R, C) sums the inputs (r, c) with r / b = R and c / b = C. A binned
// frame whose first input (R b, C b) is at or after `first` starts from zero; one without an input in [first, end)
// is left as it is. *d_overflow = 1 when a sum passes uint32. Every touched row must lie in [row0, row0 + rows).
void accumulate(const void* d_frames, DType dtype, std::size_t first, std::size_t end, std::size_t scan_cols,
                std::size_t b, std::size_t frame_pixels, std::size_t row0, std::uint32_t* d_acc, int* d_overflow,
                CUstream_st* stream);

// Whether each of the (scan_rows / b) x (scan_cols / b) values at d_binned equals the sum of its b x b block of the
// scan_rows x scan_cols values at d_full (device uint64 both; waits for `stream`).
bool binned_totals_equal(const std::uint64_t* d_full, std::size_t scan_rows, std::size_t scan_cols, std::size_t b,
                         const std::uint64_t* d_binned, CUstream_st* stream);

}  // namespace qgpu::binned::cuda
