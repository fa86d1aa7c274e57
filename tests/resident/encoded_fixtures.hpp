#pragma once
// Dense test data for the encoded resident and dense reference answers computed straight from it.
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "core/dtype.hpp"
#include "resident/dataset.hpp"
#include "resident/shape.hpp"

namespace qgpu::test {

struct Dense {
  Shape4D shape;
  DType dtype = DType::u16;
  std::vector<std::uint8_t> bytes;
  std::size_t frame_pixels() const { return shape.frame_pixels(); }
  std::uint32_t at(std::size_t frame, std::size_t pixel) const {
    const std::size_t i = frame * frame_pixels() + pixel;
    switch (dtype) {
      case DType::u8: return bytes[i];
      case DType::u16: return reinterpret_cast<const std::uint16_t*>(bytes.data())[i];
      default: return reinterpret_cast<const std::uint32_t*>(bytes.data())[i];
    }
  }
  void set(std::size_t frame, std::size_t pixel, std::uint32_t v) {
    const std::size_t i = frame * frame_pixels() + pixel;
    switch (dtype) {
      case DType::u8: bytes[i] = static_cast<std::uint8_t>(v); break;
      case DType::u16: reinterpret_cast<std::uint16_t*>(bytes.data())[i] = static_cast<std::uint16_t>(v); break;
      default: reinterpret_cast<std::uint32_t*>(bytes.data())[i] = v;
    }
  }
};

inline std::uint32_t max_count(DType t) {
  return t == DType::u8 ? 0xffu : t == DType::u16 ? 0xffffu : 0xffffffffu;
}

// Every pixel follows one of several distributions by its index: zero, constant, saturated, sparse, Poisson
// (small and large mean), random full range, and zero-or-max; so every stream model and the escapes appear.
inline Dense mixed(const Shape4D& shape, DType dtype, std::uint64_t seed = 1) {
  Dense d{shape, dtype, std::vector<std::uint8_t>(shape.elements() * dtype_size(dtype))};
  std::mt19937_64 rng(seed);
  const std::uint32_t mx = max_count(dtype);
  std::poisson_distribution<std::uint32_t> small(1.5), large(dtype == DType::u8 ? 100.0 : 800.0);
  std::uniform_int_distribution<std::uint32_t> any(0, mx);
  std::bernoulli_distribution rare(0.01), half(0.5);
  for (std::size_t f = 0; f < shape.frames(); ++f)
    for (std::size_t p = 0; p < d.frame_pixels(); ++p) {
      std::uint32_t v = 0;
      switch (p % 9) {
        case 0: v = 0; break;
        case 1: v = 3; break;
        case 2: v = mx; break;
        case 3: v = rare(rng) ? (half(rng) ? 1u : any(rng)) : 0u; break;
        case 4: v = std::min(small(rng), mx); break;
        case 5: v = std::min(large(rng), mx); break;
        case 6: v = any(rng); break;
        case 7: v = half(rng) ? mx : 0u; break;
        case 8: v = std::min(small(rng), mx) + (rare(rng) ? mx / 2 : 0u); break;  // Poisson with outliers
      }
      d.set(f, p, v);
    }
  return d;
}

inline std::vector<std::uint64_t> ref_masked_sum(const Dense& d, const std::vector<std::uint32_t>& pixels,
                                                 const std::vector<std::uint32_t>& weights) {
  std::vector<std::uint64_t> out(d.shape.frames(), 0);
  for (std::size_t f = 0; f < out.size(); ++f)
    for (std::size_t j = 0; j < pixels.size(); ++j) out[f] += std::uint64_t(weights[j]) * d.at(f, pixels[j]);
  return out;
}
inline std::vector<std::uint64_t> ref_totals(const Dense& d) {
  std::vector<std::uint64_t> out(d.shape.frames(), 0);
  for (std::size_t f = 0; f < out.size(); ++f)
    for (std::size_t p = 0; p < d.frame_pixels(); ++p) out[f] += d.at(f, p);
  return out;
}
inline std::vector<std::uint64_t> ref_sum_pattern(const Dense& d) {
  std::vector<std::uint64_t> out(d.frame_pixels(), 0);
  for (std::size_t f = 0; f < d.shape.frames(); ++f)
    for (std::size_t p = 0; p < out.size(); ++p) out[p] += d.at(f, p);
  return out;
}
inline std::vector<std::uint8_t> ref_frame(const Dense& d, std::size_t f) {
  const std::size_t fb = d.frame_pixels() * dtype_size(d.dtype);
  return {d.bytes.begin() + f * fb, d.bytes.begin() + (f + 1) * fb};
}
// The rectangle [row][col][det_row][det_col] of the dense data.
inline std::vector<std::uint8_t> ref_region(const Dense& d, const Region& s, const Region& k) {
  const std::size_t e = dtype_size(d.dtype);
  std::vector<std::uint8_t> out;
  for (std::size_t r = s.row0; r < s.row0 + s.rows; ++r)
    for (std::size_t c = s.col0; c < s.col0 + s.cols; ++c)
      for (std::size_t dr = k.row0; dr < k.row0 + k.rows; ++dr)
        for (std::size_t dc = k.col0; dc < k.col0 + k.cols; ++dc) {
          const std::size_t i = ((r * d.shape.scan_cols + c) * d.shape.det_rows + dr) * d.shape.det_cols + dc;
          out.insert(out.end(), d.bytes.begin() + i * e, d.bytes.begin() + (i + 1) * e);
        }
  return out;
}

// The listed pixels at every frame, [j][frame], native dtype.
inline std::vector<std::uint8_t> ref_pixels(const Dense& d, const std::vector<std::uint32_t>& pixels) {
  Dense out{{1, 1, pixels.size(), d.shape.frames()}, d.dtype,
            std::vector<std::uint8_t>(pixels.size() * d.shape.frames() * dtype_size(d.dtype))};
  for (std::size_t j = 0; j < pixels.size(); ++j)
    for (std::size_t f = 0; f < d.shape.frames(); ++f) out.set(0, j * d.shape.frames() + f, d.at(f, pixels[j]));
  return out.bytes;
}

// A mask-like pixel list: every third pixel with weights 1..7, plus the last pixel with the largest weight.
inline void some_pixels(std::size_t frame_pixels, std::vector<std::uint32_t>& pixels,
                        std::vector<std::uint32_t>& weights) {
  pixels.clear();
  weights.clear();
  for (std::uint32_t p = 0; p < frame_pixels; p += 3) {
    pixels.push_back(p);
    weights.push_back(1 + p % 7);
  }
  pixels.push_back(static_cast<std::uint32_t>(frame_pixels - 1));
  weights.push_back(0xffffffffu);
}

}  // namespace qgpu::test
