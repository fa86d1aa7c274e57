#include "resident/shape.hpp"

#include "core/error.hpp"

namespace qgpu {

std::size_t Shape4D::nbytes(std::size_t elem_size) const {
  const std::uint64_t n = checked_mul(elements(), elem_size, "array size in bytes (elements x element size)");
  if (n > kMaxArrayBytes)
    throw FormatError("shape " + std::to_string(scan_rows) + "x" + std::to_string(scan_cols) + "x" +
                      std::to_string(det_rows) + "x" + std::to_string(det_cols) + " needs " + std::to_string(n) +
                      " bytes, beyond any memory (limit " + std::to_string(kMaxArrayBytes) + ")");
  return n;
}

Region resolve_region(const Region& r, std::size_t rows, std::size_t cols, const std::string& what) {
  if (r.is_full()) return Region{0, 0, rows, cols};
  auto text = [&] {
    return what + " region (row0=" + std::to_string(r.row0) + ", col0=" + std::to_string(r.col0) +
           ", rows=" + std::to_string(r.rows) + ", cols=" + std::to_string(r.cols) + ")";
  };
  if (r.rows == 0 || r.cols == 0) throw RegionError(text() + " is empty");
  // Compared without forming row0 + rows, which can wrap for values from a request.
  if (r.rows > rows || r.row0 > rows - r.rows || r.cols > cols || r.col0 > cols - r.cols)
    throw RegionError(text() + " is out of bounds for the " + what + " extent " + std::to_string(rows) + "x" +
                      std::to_string(cols));
  return r;
}

}  // namespace qgpu
