#pragma once
// CoM and DPC field arithmetic shared by the host reference and the CUDA kernels: identical code on both sides, so
// that the same exact integer sums give the same float bits (IEEE double conversion and division, round to nearest;
// both sides are built without contraction: -ffp-contract=off, -fmad=false).
#include <cstdint>

#include "core/hd.hpp"

namespace qgpu::dpc::detail {

// True when Sr <= S * max_index might not fit in uint64, i.e. the exact weighted sums may have wrapped.
QGPU_HD inline bool com_sums_may_wrap(std::uint64_t s, std::uint64_t max_index) {
  return max_index != 0 && s > ~std::uint64_t(0) / max_index;
}

// CoM from the exact sums; an empty frame (S == 0) gets the detector centre.
QGPU_HD inline void com_from_sums(std::uint64_t s, std::uint64_t sr, std::uint64_t sc, double centre_row,
                                  double centre_col, float& com_row, float& com_col) {
  if (s == 0) {
    com_row = static_cast<float>(centre_row);
    com_col = static_cast<float>(centre_col);
    return;
  }
  const double ds = static_cast<double>(s);
  com_row = static_cast<float>(static_cast<double>(sr) / ds);
  com_col = static_cast<float>(static_cast<double>(sc) / ds);
}

// The centred DPC of one CoM value (centered_dpc): float(double(com) - ref).
QGPU_HD inline float centred_value(float com, double ref) { return static_cast<float>(static_cast<double>(com) - ref); }

// The field rotated by (cos, sin) (rotate_field): (fr, fc) are the centred DPC's components after the transpose.
QGPU_HD inline void rotated_value(float fr, float fc, double cos, double sin, float& out_row, float& out_col) {
  out_row = static_cast<float>(cos * fr - sin * fc);
  out_col = static_cast<float>(sin * fr + cos * fc);
}

}  // namespace qgpu::dpc::detail
