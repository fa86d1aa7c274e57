#pragma once
// Bit shuffling of one bitshuffle block on the host with SWAR 8x8 bit-matrix transposes on uint64 words.
// planes <-> elements: plane p (bit p of the value, p = 8 * byte + bit) holds n / 8 bytes; element e is bit
// (e & 7) of byte e >> 3 of every plane. Little-endian hosts only.
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "io/hdf5/codec/bit_transpose_word.hpp"

namespace qgpu::io::codec {

// The word type may be a GCC vector (U64x4) in inline helpers only: no vector crosses an ABI boundary, so GCC's
// note on the AVX vector ABI (reported at the end of the including file) does not apply.
#pragma GCC diagnostic ignored "-Wpsabi"

static_assert(std::endian::native == std::endian::little, "the host bit shuffle assumes little-endian words");

namespace detail {

// Four 64-bit words processed side by side (GCC vector extension: SSE2/AVX2 code for the same SWAR steps).
typedef std::uint64_t U64x4 __attribute__((vector_size(32)));

// 256 elements at once: lane q of every word handles elements [64 q, 64 q + 64), as unshuffle64 does.
template <std::size_t ES>
[[gnu::always_inline]] inline void unshuffle256(const std::uint8_t* planes, std::size_t stride, std::uint8_t* out) {
  U64x4 w[ES][8];
  for (std::size_t b = 0; b < ES; ++b) {
    U64x4* r = w[b];
    for (std::size_t j = 0; j < 8; ++j) std::memcpy(&r[j], planes + (8 * b + j) * stride, 32);
    transpose_bits_in_lanes(r);
    transpose_bytes(r);
  }
  for (std::size_t l = 0; l < 8; ++l) {
    if constexpr (ES == 1) {
      for (int q = 0; q < 4; ++q) store64(out + (8 * q + l) * 8, w[0][l][q]);
    } else if constexpr (ES == 2) {
      const U64x4 lo = spread_bytes(w[0][l]) | spread_bytes(w[1][l]) << 8;
      const U64x4 hi = spread_bytes(w[0][l] >> 32) | spread_bytes(w[1][l] >> 32) << 8;
      for (int q = 0; q < 4; ++q) {
        store64(out + (8 * q + l) * 16, lo[q]);
        store64(out + (8 * q + l) * 16 + 8, hi[q]);
      }
    } else {
      for (int q = 0; q < 4; ++q)
        for (std::size_t k = 0; k < 8; ++k)
          for (std::size_t b = 0; b < ES; ++b)
            out[((8 * q + l) * 8 + k) * ES + b] = std::uint8_t(w[b][l][q] >> (8 * k));
    }
  }
}

// Inverse of unshuffle64: 64 elements -> 8 bytes of each plane.
template <std::size_t ES>
[[gnu::always_inline]] inline void shuffle64(const std::uint8_t* in, std::uint8_t* planes, std::size_t stride) {
  std::uint64_t w[ES][8];
  for (std::size_t l = 0; l < 8; ++l) {
    const std::uint8_t* s = in + l * 8 * ES;
    if constexpr (ES == 1) {
      w[0][l] = load64(s);
    } else if constexpr (ES == 2) {
      const std::uint64_t lo = load64(s), hi = load64(s + 8);
      w[0][l] = gather_even_bytes(lo) | gather_even_bytes(hi) << 32;
      w[1][l] = gather_even_bytes(lo >> 8) | gather_even_bytes(hi >> 8) << 32;
    } else {
      for (std::size_t b = 0; b < ES; ++b) {
        std::uint64_t v = 0;
        for (std::size_t k = 0; k < 8; ++k) v |= std::uint64_t(s[k * ES + b]) << (8 * k);
        w[b][l] = v;
      }
    }
  }
  for (std::size_t b = 0; b < ES; ++b) {
    std::uint64_t* r = w[b];
    transpose_bytes(r);
    transpose_bits_in_lanes(r);
    for (std::size_t j = 0; j < 8; ++j) store64(planes + (8 * b + j) * stride, r[j]);
  }
}

// Inverse of unshuffle256: 256 elements -> 32 bytes of each plane.
template <std::size_t ES>
[[gnu::always_inline]] inline void shuffle256(const std::uint8_t* in, std::uint8_t* planes, std::size_t stride) {
  U64x4 w[ES][8];
  for (std::size_t l = 0; l < 8; ++l) {
    if constexpr (ES == 1) {
      for (int q = 0; q < 4; ++q) w[0][l][q] = load64(in + (8 * q + l) * 8);
    } else if constexpr (ES == 2) {
      U64x4 lo, hi;
      for (int q = 0; q < 4; ++q) {
        lo[q] = load64(in + (8 * q + l) * 16);
        hi[q] = load64(in + (8 * q + l) * 16 + 8);
      }
      w[0][l] = gather_even_bytes(lo) | gather_even_bytes(hi) << 32;
      w[1][l] = gather_even_bytes(lo >> 8) | gather_even_bytes(hi >> 8) << 32;
    } else {
      for (int q = 0; q < 4; ++q)
        for (std::size_t b = 0; b < ES; ++b) {
          std::uint64_t v = 0;
          for (std::size_t k = 0; k < 8; ++k) v |= std::uint64_t(in[((8 * q + l) * 8 + k) * ES + b]) << (8 * k);
          w[b][l][q] = v;
        }
    }
  }
  for (std::size_t b = 0; b < ES; ++b) {
    U64x4* r = w[b];
    transpose_bytes(r);
    transpose_bits_in_lanes(r);
    for (std::size_t j = 0; j < 8; ++j) std::memcpy(planes + (8 * b + j) * stride, &r[j], 32);
  }
}

}  // namespace detail

// Bit planes of one block of n elements (n a multiple of 8) -> n elements of ES bytes.
template <std::size_t ES>
[[gnu::always_inline]] inline void bit_unshuffle_block(const std::uint8_t* planes, std::size_t n, std::uint8_t* out) {
  const std::size_t plane_bytes = n / 8;
  std::size_t g = 0;
  for (; g + 32 <= plane_bytes; g += 32) detail::unshuffle256<ES>(planes + g, plane_bytes, out + g * 8 * ES);
  for (; g + 8 <= plane_bytes; g += 8) detail::unshuffle64<ES>(planes + g, plane_bytes, out + g * 8 * ES);
  if (g < plane_bytes) {  // fewer than 64 elements left: pad the planes to 8 bytes each
    const std::size_t left = plane_bytes - g;
    std::uint8_t tmp[8 * ES * 8] = {};
    std::uint8_t o[64 * ES];
    for (std::size_t p = 0; p < 8 * ES; ++p) std::memcpy(tmp + p * 8, planes + p * plane_bytes + g, left);
    detail::unshuffle64<ES>(tmp, 8, o);
    std::memcpy(out + g * 8 * ES, o, left * 8 * ES);
  }
}

// n elements of ES bytes (n a multiple of 8) -> bit planes of one block.
template <std::size_t ES>
[[gnu::always_inline]] inline void bit_shuffle_block(const std::uint8_t* in, std::size_t n, std::uint8_t* planes) {
  const std::size_t plane_bytes = n / 8;
  std::size_t g = 0;
  for (; g + 32 <= plane_bytes; g += 32) detail::shuffle256<ES>(in + g * 8 * ES, planes + g, plane_bytes);
  for (; g + 8 <= plane_bytes; g += 8) detail::shuffle64<ES>(in + g * 8 * ES, planes + g, plane_bytes);
  if (g < plane_bytes) {
    const std::size_t left = plane_bytes - g;
    std::uint8_t tmp[8 * ES * 8];
    std::uint8_t src[64 * ES] = {};
    std::memcpy(src, in + g * 8 * ES, left * 8 * ES);
    detail::shuffle64<ES>(src, tmp, 8);
    for (std::size_t p = 0; p < 8 * ES; ++p) std::memcpy(planes + p * plane_bytes + g, tmp + p * 8, left);
  }
}

// Runtime element size (1, 2, 4 or 8); returns false for other sizes.
[[gnu::always_inline]] inline bool bit_unshuffle_block(std::size_t elem_size, const std::uint8_t* planes, std::size_t n,
                                                      std::uint8_t* out) {
  switch (elem_size) {
    case 1: bit_unshuffle_block<1>(planes, n, out); return true;
    case 2: bit_unshuffle_block<2>(planes, n, out); return true;
    case 4: bit_unshuffle_block<4>(planes, n, out); return true;
    case 8: bit_unshuffle_block<8>(planes, n, out); return true;
    default: return false;
  }
}
[[gnu::always_inline]] inline bool bit_shuffle_block(std::size_t elem_size, const std::uint8_t* in, std::size_t n,
                                                    std::uint8_t* planes) {
  switch (elem_size) {
    case 1: bit_shuffle_block<1>(in, n, planes); return true;
    case 2: bit_shuffle_block<2>(in, n, planes); return true;
    case 4: bit_shuffle_block<4>(in, n, planes); return true;
    case 8: bit_shuffle_block<8>(in, n, planes); return true;
    default: return false;
  }
}

}  // namespace qgpu::io::codec
