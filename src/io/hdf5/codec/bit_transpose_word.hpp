#pragma once
// SWAR bit shuffling of 64 elements per call (8x8 bit-matrix transposes on 64-bit words), shared by the host codec
// and the CUDA decoder. planes <-> elements: plane p (bit p of the value, p = 8 * byte + bit) holds n / 8 bytes;
// element e is bit (e & 7) of byte e >> 3 of every plane. Little-endian words. The word type W is uint64 (GPU, host)
// or a GCC vector of uint64 (host: several words side by side, see bit_transpose.hpp).
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "core/hd.hpp"

#ifndef __CUDACC__
// The host word type may be a GCC vector (bit_transpose.hpp) in inline helpers only: no vector crosses an ABI
// boundary, so GCC's note on the AVX vector ABI does not apply.
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

namespace qgpu::io::codec::detail {


// Swaps the bits selected by m << s of a with the bits selected by m of c (a block swap of a transpose step).
template <class W>
QGPU_HD_INLINE void swap_blocks(W& a, W& c, std::uint64_t m, int s) {
  const W t = ((a >> s) ^ c) & m;
  c ^= t;
  a ^= t << s;
}

// One step of a recursive transpose: rows j and j + D (j without bit D) swap their off-diagonal blocks.
template <int D, class W>
QGPU_HD_INLINE void swap_rows(W r[8], std::uint64_t m, int s) {
  for (int j = 0; j < 8; ++j)
    if ((j & D) == 0) swap_blocks(r[j], r[j + D], m, s);
}

// For each byte lane l independently: the 8x8 bit matrix whose row j is byte l of r[j] is transposed
// (afterwards bit j of byte l of r[k] is the old bit k of byte l of r[j]).
template <class W>
QGPU_HD_INLINE void transpose_bits_in_lanes(W r[8]) {
  swap_rows<4>(r, 0x0F0F0F0F0F0F0F0Full, 4);
  swap_rows<2>(r, 0x3333333333333333ull, 2);
  swap_rows<1>(r, 0x5555555555555555ull, 1);
}

// 8x8 byte matrix transpose: afterwards byte k of r[l] is the old byte l of r[k].
template <class W>
QGPU_HD_INLINE void transpose_bytes(W r[8]) {
  swap_rows<4>(r, 0x00000000FFFFFFFFull, 32);
  swap_rows<2>(r, 0x0000FFFF0000FFFFull, 16);
  swap_rows<1>(r, 0x00FF00FF00FF00FFull, 8);
}

QGPU_HD_INLINE std::uint64_t load64(const std::uint8_t* p) {
#ifdef __CUDA_ARCH__
  return *reinterpret_cast<const std::uint64_t*>(p);  // on the GPU, callers pass 8-byte aligned words
#else
  std::uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
#endif
}
QGPU_HD_INLINE void store64(std::uint8_t* p, std::uint64_t v) {
#ifdef __CUDA_ARCH__
  *reinterpret_cast<std::uint64_t*>(p) = v;
#else
  std::memcpy(p, &v, 8);
#endif
}

// Spreads the 4 low bytes of x to the even bytes of the result.
template <class W>
QGPU_HD_INLINE W spread_bytes(const W& in) {
  W x = in & 0xFFFFFFFFull;
  x = (x | (x << 16)) & 0x0000FFFF0000FFFFull;
  return (x | (x << 8)) & 0x00FF00FF00FF00FFull;
}
// Spreads the 2 low 16-bit halves of x to the even halves of the result.
QGPU_HD_INLINE std::uint64_t spread_halves(std::uint64_t x) {
  x &= 0xFFFFFFFFull;
  return (x | (x << 16)) & 0x0000FFFF0000FFFFull;
}
// Inverse of spread_bytes: gathers the even bytes into the 4 low bytes.
template <class W>
QGPU_HD_INLINE W gather_even_bytes(const W& in) {
  W x = in & 0x00FF00FF00FF00FFull;
  x = (x | (x >> 8)) & 0x0000FFFF0000FFFFull;
  return (x | (x >> 16)) & 0xFFFFFFFFull;
}

QGPU_HD_INLINE std::uint64_t popcount64(std::uint64_t x) {
#if defined(__CUDA_ARCH__)
  return static_cast<std::uint64_t>(__popcll(x));
#else
  return static_cast<std::uint64_t>(__builtin_popcountll(x));
#endif
}

// 64 elements (8 bytes of each plane, planes `stride` bytes apart) -> out (64 * ES bytes). Returns which of the 64
// elements are nonzero (bit e: element e; the OR of the planes' words, for the GPU decoder's LiveGroups marks).
// Sum: adds the 64 elements' sum to *sum, from the planes' words (each set bit of the plane of output bit p adds 2^p:
// popcounts, no pass over the elements; the GPU decoder's frame totals). A compile-time choice with the loops unrolled:
// a runtime test in the loop left w[][] indexed at run time, in local memory on the GPU (a 144-byte stack frame that
// cost the decoder ~20 % of its time).
// Swap: the planes hold elements stored big-endian; output byte b is made from the planes of stored byte ES - 1 - b,
// so the elements come out in little-endian order (the GPU decoder's byte swap, free of an extra pass).
template <std::size_t ES, bool Swap = false, bool Sum = false>
QGPU_HD_INLINE std::uint64_t unshuffle64(const std::uint8_t* planes, std::size_t stride, std::uint8_t* out,
                                         std::uint64_t* sum = nullptr) {
  std::uint64_t w[ES][8];  // w[b][l]: byte k = byte b of element l * 8 + k
  std::uint64_t nonzero = 0, total = 0;
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
  for (std::size_t b = 0; b < ES; ++b) {
    std::uint64_t* r = w[b];
    const std::size_t stored = Swap ? ES - 1 - b : b;  // the stored byte that becomes output byte b
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
    for (std::size_t j = 0; j < 8; ++j) {
      r[j] = load64(planes + (8 * stored + j) * stride);
      nonzero |= r[j];
      if constexpr (Sum) total += popcount64(r[j]) << (8 * b + j);  // r[j]: bit 8 b + j of the output elements
    }
    transpose_bits_in_lanes(r);
    transpose_bytes(r);
  }
  for (std::size_t l = 0; l < 8; ++l) {
    std::uint8_t* o = out + l * 8 * ES;
    if constexpr (ES == 1) {
      store64(o, w[0][l]);
    } else if constexpr (ES == 2) {
      store64(o, spread_bytes(w[0][l]) | spread_bytes(w[1][l]) << 8);
      store64(o + 8, spread_bytes(w[0][l] >> 32) | spread_bytes(w[1][l] >> 32) << 8);
    } else if constexpr (ES == 4) {  // 16-bit halves as for ES == 2, then interleaved into 32-bit elements
      for (int h = 0; h < 2; ++h) {  // elements 0..3, then 4..7
        const std::uint64_t lo = spread_bytes(w[0][l] >> (32 * h)) | spread_bytes(w[1][l] >> (32 * h)) << 8;
        const std::uint64_t hi = spread_bytes(w[2][l] >> (32 * h)) | spread_bytes(w[3][l] >> (32 * h)) << 8;
        store64(o + 16 * h, spread_halves(lo) | spread_halves(hi) << 16);
        store64(o + 16 * h + 8, spread_halves(lo >> 32) | spread_halves(hi >> 32) << 16);
      }
    } else {
      for (std::size_t k = 0; k < 8; ++k)
        for (std::size_t b = 0; b < ES; ++b) o[k * ES + b] = std::uint8_t(w[b][l] >> (8 * k));
    }
  }
  if constexpr (Sum) *sum += total;
  return nonzero;
}

}  // namespace qgpu::io::codec::detail
