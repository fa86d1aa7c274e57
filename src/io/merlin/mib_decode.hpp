#pragma once
// Decoding one Merlin frame payload into the native frame (row-major, PixelFormat::out_dtype), and the inverse
// for the sample writer. The per-pixel mapping below is shared by the host decoder and the CUDA kernel
// (cuda/decode_mib.cu), so both give the same bytes; tests/io/merlin checks the host decoder against an
// independent numpy reading of real files.
//
// Decoded pixel (r, c) (after flip_rows) is, for
//   binary: the big-endian value at r * cols + c of the stored frame;
//   raw single chip: raw pixel i = r * cols + c;
//   raw quad (chip side s, 2x2G: a 2-pixel gap cross of zeros after row/col s - 1, removed first):
//     top (r < s): raw row r, raw col c < s ? 3s + c : s + c          (chip 1 | chip 2 as stored)
//     bottom:      raw row 2s - 1 - r, raw col 2s - 1 - c             (chips 3, 4 flipped in x and y)
//     raw pixel i = raw row * 4s + raw col;
// and raw pixel i of depth 1: bit (i % 8) of byte 8 * (i / 64) + 7 - (i % 64) / 8; 6: byte 8 * (i / 8) + 7 - i % 8;
// 12: big-endian u16 number 4 * (i / 4) + 3 - i % 4; 24: (that u16 of the first half << 12) + that of the second.
#include <cstddef>
#include <cstdint>

#include "core/hd.hpp"
#include "io/merlin/pixel_format.hpp"

namespace qgpu::io::merlin {

QGPU_HD_INLINE std::uint32_t load_be16(const std::uint8_t* p) { return (std::uint32_t(p[0]) << 8) | p[1]; }
QGPU_HD_INLINE std::uint32_t load_be32(const std::uint8_t* p) {
  return (std::uint32_t(p[0]) << 24) | (std::uint32_t(p[1]) << 16) | (std::uint32_t(p[2]) << 8) | p[3];
}

// Raw pixel index (stored order of the raw image, before the groups are reversed) of decoded pixel (r, c);
// false for a gap pixel of the 2x2G layout (decoded as 0). r is the row after flip_rows.
QGPU_HD_INLINE bool raw_index(const PixelFormat& f, std::uint32_t r, std::uint32_t c, std::uint32_t* i) {
  if (!f.quad_raw()) {
    *i = r * f.cols + c;
    return true;
  }
  const std::uint32_t s = f.chip;
  if (f.gap()) {
    if (r == s || r == s + 1 || c == s || c == s + 1) return false;
    if (r > s) r -= 2;
    if (c > s) c -= 2;
  }
  if (r < s)
    *i = r * 4 * s + (c < s ? 3 * s + c : s + c);
  else
    *i = (2 * s - 1 - r) * 4 * s + (2 * s - 1 - c);
  return true;
}

// Value of raw pixel i of a raw payload p.
QGPU_HD_INLINE std::uint32_t raw_value(const PixelFormat& f, const std::uint8_t* p, std::uint32_t i) {
  switch (f.counter_depth) {
    case 1: return (p[8u * (i >> 6) + 7u - ((i & 63u) >> 3)] >> (i & 7u)) & 1u;
    case 6: return p[(i & ~7u) + 7u - (i & 7u)];
    case 12: return load_be16(p + 2u * ((i & ~3u) + 3u - (i & 3u)));
    default: {  // 24: two 12-bit images, the first the high bits
      const std::uint32_t j = (i & ~3u) + 3u - (i & 3u);
      const std::uint64_t half = f.payload_bytes / 2;
      return (load_be16(p + 2u * j) << 12) + load_be16(p + half + 2u * j);
    }
  }
}

// Decoded pixel (r, c) of the frame whose payload starts at p.
QGPU_HD_INLINE std::uint32_t mib_pixel(const PixelFormat& f, const std::uint8_t* p, std::uint32_t r, std::uint32_t c) {
  if (f.flip_rows) r = f.rows - 1 - r;
  if (!f.raw) {
    const std::uint64_t k = std::uint64_t(r) * f.cols + c;
    switch (f.stored) {
      case PixelType::U16: return load_be16(p + 2 * k);
      case PixelType::U32: return load_be32(p + 4 * k);
      default: return p[k];  // U01, U08
    }
  }
  std::uint32_t i = 0;
  return raw_index(f, r, c, &i) ? raw_value(f, p, i) : 0u;
}

// Decodes one frame: payload (f.payload_bytes) -> out_frame (f.rows x f.cols of f.out_dtype).
void decode_frame_host(const PixelFormat& f, const std::uint8_t* payload, void* out_frame);

// The inverse, for writers: frame (f.rows x f.cols of f.out_dtype, values within the counter depth; gap pixels of
// 2x2G raw frames are dropped) -> payload (f.payload_bytes). Counts above the counter depth raise InvalidArgument.
void encode_frame_host(const PixelFormat& f, const void* frame, std::uint8_t* payload);

}  // namespace qgpu::io::merlin
