#pragma once
// encoded-v1: the compact exact resident format (shared by host and device code; see docs/design.md).
//
// The acquisition is cut into tiles of `tile` consecutive scan positions (flat scan order; the last tile may be
// shorter). For each (tile, detector pixel) there is one stream: the pixel's counts at the tile's positions,
// encoded independently as a model byte followed by its payload (an all-zero stream is empty). Per tile a directory
// of frame_pixels + 1 uint32 offsets (relative to the tile's payload) gives stream p the bytes [dir[p], dir[p + 1]).
// Frame totals (uint64 per scan position) and the sum pattern (uint64 per pixel) are kept beside the streams.
#include <cstddef>
#include <cstdint>

#include "core/hd.hpp"

namespace qgpu::encoded {

inline constexpr const char* kSchema =
    "encoded-v1: tiles of T scan positions x detector pixels, one stream per (tile, pixel): model byte "
    "(empty = zero, 1 constant, 2 sparse, 3 raw bit-packed, 4 rANS 12-bit) + payload; per-tile uint32 stream "
    "directory; uint64 frame totals and sum pattern";

inline constexpr std::uint32_t kDefaultTile = 512;
inline constexpr std::uint32_t kMaxTile = 4096;

// How the encoder chooses among the models (both give encoded-v1 streams that every decoder reads; the bytes of a
// stream differ, the counts never). The cost model of the query kernels (resident/encoded/cuda/masked_sum_kernel.cu):
// every query decodes every value of every listed stream. Constant, raw and rANS streams with an alphabet of at most
// kFastMaxAlphabet symbols decode in lockstep (LaneDecoder: raw is a fixed-width read; rANS a table load and a few
// selects per value); sparse streams and rANS streams with a larger alphabet decode lane by lane, adding every
// value to shared memory with atomics, so a wide rANS stream costs an atomic per value. At high dose (the
// bright-field disk holds tens of counts per pixel and frame) most disk streams are wide, rANS saves at most ~10 %
// over raw there (Poisson means 6..300, CPU codec), and compact mixes rANS (some with wide alphabets) and raw lanes in
// a warp (encoded CoM measured 16.6x dense on the H200 at 2e5 counts per frame with the compact choice).
//   compact: the smallest stream (raw, sparse, rANS with any alphabet up to kMaxAlphabet).
//   fast:    rANS only with an alphabet of at most kFastMaxAlphabet (LaneDecoder's fast path) and only when it is
//            at most kFastRansNum / kFastRansDen of the raw size; else the smaller of sparse and raw (as compact).
//            The encoder also skips the rANS encoding pass for such streams (a cheaper load at high dose).
enum class Policy : std::uint8_t { compact = 0, fast = 1 };
inline constexpr std::uint32_t kFastMaxAlphabet = 30;  // == LaneDecoder::kMaxK (static_assert in lane_decoder.hpp)
inline constexpr std::uint32_t kFastRansNum = 3, kFastRansDen = 4;

// kZero is never stored: a zero stream is empty (dir[p] == dir[p + 1]).
enum Model : std::uint8_t { kZero = 0, kConstant = 1, kSparse = 2, kRaw = 3, kRans = 4 };

// rANS (byte-wise renormalisation, 32-bit state): probabilities in 1/4096, state in [kRansL, kRansL << 8).
inline constexpr std::uint32_t kRansScaleBits = 12;
inline constexpr std::uint32_t kRansScale = 1u << kRansScaleBits;
inline constexpr std::uint32_t kRansL = 1u << 23;
// Largest escape symbol index K (symbols 0..K-1 are offsets from the stream's base, K means "escaped").
inline constexpr std::uint32_t kMaxAlphabet = 128;

// Device payload buffers are allocated this many bytes beyond their last stream, so that a kernel may copy a
// stream in whole aligned 32-bit words (up to 3 bytes past its end) without leaving the allocation.
inline constexpr std::size_t kPayloadPad = 16;

// One tile as the decoders see it: its stream payloads and directory (host or device pointers).
struct TileRef {
  const std::uint8_t* payload = nullptr;
  const std::uint32_t* dir = nullptr;  // frame_pixels + 1 offsets into payload
  std::uint32_t len = 0;               // scan positions in this tile
  std::uint32_t reserved = 0;
};

// Largest size a stream of n values can take (the raw model with 32-bit width), rounded up to 8 bytes: the
// encoders' per-stream scratch slot.
QGPU_HD inline std::uint32_t stream_slot_bytes(std::uint32_t n) { return ((4u * n + 7u) + 7u) & ~7u; }

// Unsigned LEB128, at most 5 bytes for 32 bits.
QGPU_HD inline std::uint32_t varint_size(std::uint32_t v) {
  std::uint32_t s = 1;
  while (v >= 0x80u) {
    v >>= 7;
    ++s;
  }
  return s;
}
QGPU_HD inline std::uint8_t* put_varint(std::uint8_t* p, std::uint32_t v) {
  while (v >= 0x80u) {
    *p++ = std::uint8_t(v | 0x80u);
    v >>= 7;
  }
  *p++ = std::uint8_t(v);
  return p;
}

// Bounds-checked forward reader over one stream; `ok` turns false on any read past the end or bad varint.
struct ByteReader {
  const std::uint8_t* p;
  const std::uint8_t* end;
  bool ok = true;
  QGPU_HD std::uint8_t byte() {
    if (p >= end) {
      ok = false;
      return 0;
    }
    return *p++;
  }
  QGPU_HD std::uint32_t varint() {
    std::uint32_t v = 0;
    for (std::uint32_t shift = 0; shift < 35; shift += 7) {
      const std::uint8_t b = byte();
      if (!ok) return 0;
      v |= std::uint32_t(b & 0x7fu) << shift;
      if (!(b & 0x80u)) return v;
    }
    ok = false;
    return 0;
  }
};

// Bits needed for v (0 for 0).
QGPU_HD inline std::uint32_t bit_width(std::uint32_t v) {
  std::uint32_t w = 0;
  while (v) {
    ++w;
    v >>= 1;
  }
  return w;
}

}  // namespace qgpu::encoded
