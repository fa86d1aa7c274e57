#include "resident/shape.hpp"

#include "core/error.hpp"

namespace qgpu {

Region resolve_region(const Region& r, std::size_t rows, std::size_t cols, const std::string& what) {
  if (r.is_full()) return Region{0, 0, rows, cols};
  auto text = [&] {
    return what + " region (row0=" + std::to_string(r.row0) + ", col0=" + std::to_string(r.col0) +
           ", rows=" + std::to_string(r.rows) + ", cols=" + std::to_string(r.cols) + ")";
  };
  if (r.rows == 0 || r.cols == 0) throw RegionError(text() + " is empty");
  if (r.row0 + r.rows > rows || r.col0 + r.cols > cols)
    throw RegionError(text() + " is out of bounds for the " + what + " extent " + std::to_string(rows) + "x" +
                      std::to_string(cols));
  return r;
}

}  // namespace qgpu
