#pragma once
// Scan binning of a per-position product: the values of b x b blocks of scan positions summed into one, a
// (scan_rows / b) x (scan_cols / b) image. For counts the sums stay exact integers (the same image as the product
// of the scan binned first); the display answers of a large scan (4096x4096 positions) come this way.
#include <algorithm>
#include <cstddef>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/parallel_for.hpp"
#include "resident/shape.hpp"

namespace qgpu {

// InvalidArgument unless b >= 1 divides both scan dimensions (naming the scan and its common divisors up to 64).
inline void check_scan_bin(std::size_t scan_rows, std::size_t scan_cols, std::size_t b) {
  if (b >= 1 && scan_rows % b == 0 && scan_cols % b == 0) return;
  std::string ok;
  for (std::size_t d = 1; d <= 64 && d <= scan_rows && d <= scan_cols; ++d)
    if (scan_rows % d == 0 && scan_cols % d == 0) ok += (ok.empty() ? "" : ", ") + std::to_string(d);
  throw InvalidArgument("scan bin " + std::to_string(b) + " does not divide the " + std::to_string(scan_rows) + "x" +
                        std::to_string(scan_cols) + " scan (exact bins: " + ok + ")");
}
inline void check_scan_bin(const Shape4D& s, std::size_t b) { check_scan_bin(s.scan_rows, s.scan_cols, b); }

// The viewer's display bin of a rows x cols scan (src/remote/web/src/scan_bin.ts chooseScanBin without an
// override): 1 when the long side is at most `limit`, else the smallest b dividing both sides that takes the long
// side to at most limit (and at least limit / 4), else 1. The bin of the scan-binned copy a load builds by default.
inline std::size_t display_scan_bin(std::size_t rows, std::size_t cols, std::size_t limit = 1024) {
  const std::size_t side = std::max(rows, cols);
  if (rows == 0 || cols == 0 || side <= limit) return 1;
  for (std::size_t b = 2; b <= std::min(rows, cols) && side >= b * (limit / 4); ++b)
    if (rows % b == 0 && cols % b == 0 && side <= b * limit) return b;
  return 1;
}

// Block sums of a rows x cols row-major image (b checked as above); b = 1 returns the values unchanged.
template <class T>
std::vector<T> bin_scan_sums(std::vector<T> v, std::size_t rows, std::size_t cols, std::size_t b) {
  check_scan_bin(rows, cols, b);
  if (v.size() != rows * cols) throw InvalidArgument("scan binning: values do not match the scan shape");
  if (b == 1) return v;
  const std::size_t orows = rows / b, oc = cols / b;
  std::vector<T> out(orows * oc, T(0));
  // Output rows in blocks of about kHostBlock input values on every core; each sum adds its values in the order of
  // a row-major pass (row by row, column by column), so float sums keep their bits.
  parallel_blocks(orows, std::max<std::size_t>(1, kHostBlock / (b * cols)), [&](std::size_t R0, std::size_t R1) {
    for (std::size_t R = R0; R < R1; ++R) {
      T* const o = out.data() + R * oc;
      for (std::size_t r = R * b; r < R * b + b; ++r) {
        const T* in = v.data() + r * cols;
        for (std::size_t C = 0; C < oc; ++C, in += b)
          for (std::size_t k = 0; k < b; ++k) o[C] += in[k];
      }
    }
  });
  return out;
}

}  // namespace qgpu
