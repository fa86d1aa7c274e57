#pragma once
// How the stored bytes of one frame record become the frame's native counts: the one thing the load pipeline asks of
// a format reader besides where the records lie. Every reader of the source layer (io/source/readers.hpp) names one.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/dtype.hpp"
#include "core/hd.hpp"
#include "io/merlin/pixel_format.hpp"

namespace qgpu::io {

enum class FrameCodecKind : std::uint8_t {
  bitshuffle,  // HDF5 filter 32008 chunk (LZ4 or zstd inside), one frame per chunk
  plain,       // the frame's elements as they are, row-major, in the stored byte order
  merlin,      // a Merlin .mib payload (binary or raw mode; io/merlin)
};

// The elements' byte order is FileInfo::byte_order, the same for every codec: decoders swap big-endian elements.
struct FrameCodec {
  FrameCodecKind kind = FrameCodecKind::bitshuffle;
  merlin::PixelFormat merlin;  // kind merlin: how the payload's pixels are stored
  std::string name() const {
    switch (kind) {
      case FrameCodecKind::bitshuffle: return "bitshuffle";
      case FrameCodecKind::plain: return "plain";
      case FrameCodecKind::merlin: return "merlin";
    }
    return "unknown";
  }
};

// Reverses the bytes of one element of `bytes` (1, 2, 4 or 8) bytes.
template <class T> QGPU_HD inline T byte_swapped(T v) {
  if constexpr (sizeof(T) == 1) {
    return v;
  } else if constexpr (sizeof(T) == 2) {
    return T((std::uint16_t(v) >> 8) | (std::uint16_t(v) << 8));
  } else if constexpr (sizeof(T) == 4) {
    const std::uint32_t x = std::uint32_t(v);
    return T((x >> 24) | ((x >> 8) & 0xff00u) | ((x << 8) & 0xff0000u) | (x << 24));
  } else {
    std::uint64_t x = std::uint64_t(v);
    x = ((x & 0x00ff00ff00ff00ffull) << 8) | ((x >> 8) & 0x00ff00ff00ff00ffull);
    x = ((x & 0x0000ffff0000ffffull) << 16) | ((x >> 16) & 0x0000ffff0000ffffull);
    return T((x << 32) | (x >> 32));
  }
}

}  // namespace qgpu::io
