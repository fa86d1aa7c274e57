#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "core/checked.hpp"

namespace qgpu {

// 4D-STEM shape: scan (rows, cols) x detector (rows, cols). The products are checked: a shape whose frame
// count, frame size or element count does not fit 64 bits raises FormatError naming the product.
struct Shape4D {
  std::size_t scan_rows = 0, scan_cols = 0, det_rows = 0, det_cols = 0;
  std::size_t frames() const { return checked_mul(scan_rows, scan_cols, "scan frame count (scan_rows x scan_cols)"); }
  std::size_t frame_pixels() const { return checked_mul(det_rows, det_cols, "frame size (det_rows x det_cols)"); }
  std::size_t elements() const { return checked_mul(frames(), frame_pixels(), "element count (frames x frame size)"); }
  // Bytes of the whole array at elem_size bytes an element; FormatError when beyond kMaxArrayBytes.
  std::size_t nbytes(std::size_t elem_size) const;
  std::vector<std::size_t> dims() const { return {scan_rows, scan_cols, det_rows, det_cols}; }
  bool operator==(const Shape4D&) const = default;
};

// A rectangle [row0, row0 + rows) x [col0, col0 + cols). rows == cols == 0 means "the whole extent".
struct Region {
  std::size_t row0 = 0, col0 = 0, rows = 0, cols = 0;
  bool is_full() const { return rows == 0 && cols == 0 && row0 == 0 && col0 == 0; }
  bool operator==(const Region&) const = default;
};

// Resolves `r` against an extent (rows x cols): fills a full region, or raises RegionError naming `what`
// when the rectangle is empty or reaches past the extent.
Region resolve_region(const Region& r, std::size_t rows, std::size_t cols, const std::string& what);

}  // namespace qgpu
