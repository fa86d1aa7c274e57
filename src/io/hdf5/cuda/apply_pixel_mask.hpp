#pragma once
// Zeroes the detector's bad pixels in frames on the GPU (host twin: io/hdf5/pixel_mask.hpp apply_pixel_mask_cpu).
// Applied to full stored frames, before detector cropping or binning.
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "core/dtype.hpp"

namespace qgpu::io::cuda {

// d_frames: n_frames consecutive frames of frame_pixels elements of dtype (u8, u16 or u32) in device memory.
// d_pixels: n_pixels flat pixel indices (row * det_cols + col, each < frame_pixels) in device memory.
// Sets those pixels to 0 in every frame. Enqueued on `stream`; DTypeError for other dtypes. d_totals (optional,
// n_frames): each frame's total, from which the zeroed values are subtracted (the decoder's encoded::LiveGroups
// totals).
void apply_pixel_mask(void* d_frames, DType dtype, std::size_t n_frames, std::size_t frame_pixels,
                      const std::uint32_t* d_pixels, std::size_t n_pixels, cudaStream_t stream,
                      unsigned long long* d_totals = nullptr);

}  // namespace qgpu::io::cuda
