#pragma once
// Binning of a block of frames on the host (reference for the CUDA kernel): exact for integers.
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>

#include "core/dtype.hpp"
#include "core/error.hpp"

namespace qgpu::io {

// The dtype of binned data: uint32 sums of counts, int32 sums of signed integers, float32 sums of floats.
template <class T>
using binned_t = std::conditional_t<std::is_floating_point_v<T>, float,
                                    std::conditional_t<std::is_signed_v<T>, std::int32_t, std::uint32_t>>;
inline DType binned_dtype(DType t) {
  return is_float_dtype(t) ? DType::f32 : is_signed_dtype(t) ? DType::i32 : DType::u32;
}

// in: frames [bin_s rows][in_cols scan][det_rows][det_cols] (full stored frames) of type T.
// Writes one output scan row: out[out_cols][out_det_r][out_det_c] of type U, where
// out_cols = region_cols / bin_s and each value sums bin_s x bin_s frames and bin_d x bin_d pixels of the
// detector rectangle starting at (det_row0, det_col0). Raises FormatError if an integer sum overflows U.
template <class T, class U>
void bin_scan_row(const T* in, std::size_t in_cols, std::size_t det_rows, std::size_t det_cols, std::size_t det_row0,
                  std::size_t det_col0, std::size_t out_cols, std::size_t out_det_r, std::size_t out_det_c,
                  std::size_t bin_s, std::size_t bin_d, U* out) {
  const std::size_t fp = det_rows * det_cols;
  for (std::size_t oc = 0; oc < out_cols; ++oc)
    for (std::size_t orr = 0; orr < out_det_r; ++orr)
      for (std::size_t occ = 0; occ < out_det_c; ++occ) {
        sum_t<T> sum = 0;
        for (std::size_t sr = 0; sr < bin_s; ++sr)
          for (std::size_t sc = 0; sc < bin_s; ++sc) {
            const T* frame = in + (sr * in_cols + oc * bin_s + sc) * fp;
            for (std::size_t dr = 0; dr < bin_d; ++dr) {
              const T* row = frame + (det_row0 + orr * bin_d + dr) * det_cols + det_col0 + occ * bin_d;
              for (std::size_t dc = 0; dc < bin_d; ++dc) sum += row[dc];
            }
          }
        if constexpr (std::is_integral_v<U>) {
          bool over = sum > sum_t<T>(std::numeric_limits<U>::max());
          if constexpr (std::is_signed_v<U>) over = over || sum < sum_t<T>(std::numeric_limits<U>::lowest());
          if (over) throw FormatError("binned value " + std::to_string(sum) + " overflows the output dtype");
        }
        out[(oc * out_det_r + orr) * out_det_c + occ] = static_cast<U>(sum);
      }
}

}  // namespace qgpu::io
