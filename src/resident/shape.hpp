#pragma once
#include <cstddef>
#include <string>
#include <vector>

namespace qgpu {

// 4D-STEM shape: scan (rows, cols) x detector (rows, cols).
struct Shape4D {
  std::size_t scan_rows = 0, scan_cols = 0, det_rows = 0, det_cols = 0;
  std::size_t frames() const { return scan_rows * scan_cols; }
  std::size_t frame_pixels() const { return det_rows * det_cols; }
  std::size_t elements() const { return frames() * frame_pixels(); }
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
