#pragma once
// A pixel mask given by the user for any reader (LoadOptions::pixel_mask_file, or an array from Python): nonzero =
// bad pixel, of the detector's full stored frame (det_rows x det_cols, in the orientation the load produces: after
// Merlin's flip_rows). It replaces the file's own mask and is applied like it: bad pixels zeroed in every full frame
// before cropping and binning.
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace qgpu::io {

struct GivenPixelMask {
  std::string source;                    // the mask file's path or "python array"; "" = none given
  std::vector<std::uint64_t> shape;      // of the array (rows, cols); empty for a text list of pixels
  std::vector<std::uint8_t> bad;         // array: one byte per element in C order, 1 = bad
  std::vector<std::pair<std::uint64_t, std::uint64_t>> pixels;  // text list: (row, col) of each bad pixel
  bool present() const { return !source.empty(); }
  // Flat indices (row * det_cols + col), ascending, for a detector of det_rows x det_cols. InvalidArgument naming
  // both shapes when the array has another shape (or a listed pixel lies outside the detector); `data` names the
  // file being loaded.
  std::vector<std::uint32_t> bad_pixels(std::size_t det_rows, std::size_t det_cols, const std::string& data) const;
};

// Reads a mask file: a .npy of any integer or bool dtype (either byte order, C or Fortran order), or a text file of
// "row col" lines (blank lines and # comments skipped). IoError when it cannot be read, DTypeError for another
// dtype, FormatError for a malformed file (naming the file and the line or field).
GivenPixelMask read_pixel_mask_file(const std::string& path);

}  // namespace qgpu::io
