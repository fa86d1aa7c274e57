#pragma once
// Detector pixel mask of an EIGER/ARINA master (entry/instrument/detector/detectorSpecific/pixel_mask, uint32,
// > 0 = bad pixel) and the host reference that zeroes the bad pixels in frames (twin of
// io/hdf5/cuda/apply_pixel_mask.hpp). Masking applies to full stored frames, before detector cropping or binning.
#include <hdf5.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.hpp"

namespace qgpu::io {

inline constexpr const char* kPixelMaskPath = "/entry/instrument/detector/detectorSpecific/pixel_mask";

struct PixelMask {
  bool present = false;
  std::vector<std::uint32_t> bad_pixels;  // flat indices (row * det_cols + col), ascending
};

// Reads the mask of `master` if present. FormatError when its shape is not (det_rows, det_cols) or it is not
// an integer array.
PixelMask read_pixel_mask(hid_t master, const std::string& master_path, std::size_t det_rows, std::size_t det_cols);

// Sets pixels[0..n_pixels) (flat indices, each < frame_pixels) to 0 in n_frames consecutive frames.
template <class T>
void apply_pixel_mask_cpu(T* frames, std::size_t n_frames, std::size_t frame_pixels, const std::uint32_t* pixels,
                          std::size_t n_pixels) {
  for (std::size_t f = 0; f < n_frames; ++f) {
    T* frame = frames + f * frame_pixels;
    for (std::size_t i = 0; i < n_pixels; ++i) frame[pixels[i]] = T(0);
  }
}

// The same for a count dtype (u8, u16, u32) known at run time.
void apply_pixel_mask_cpu(void* frames, DType dtype, std::size_t n_frames, std::size_t frame_pixels,
                          const std::uint32_t* pixels, std::size_t n_pixels);

}  // namespace qgpu::io
