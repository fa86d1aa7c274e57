#pragma once
// Chunk format of the HDF5 bitshuffle filter (id 32008, kiyo-masui/bitshuffle bshuf_h5filter.c), shared by the
// host codec and the CUDA decoder.
//
// One chunk of n elements of `elem_size` bytes:
//   12-byte header: uint64 BE decoded bytes (n * elem_size), uint32 BE block size in bytes;
//   per full block of `block_elems` elements: uint32 BE compressed length, then the compressed block;
//   one partial block of (n % block_elems) rounded down to 8 elements, framed the same, if not empty;
//   the last n % 8 elements copied verbatim.
// A block holds the bit planes of its N elements: plane p (bit p of the value) is N / 8 bytes, element e is bit
// (e & 7) of byte e >> 3. Blocks are LZ4 raw blocks (cd_values[4] == 2) or zstd frames (cd_values[4] == 3).
#include <cstddef>
#include <cstdint>

#include "core/hd.hpp"

namespace qgpu::io::codec {

inline constexpr std::size_t kChunkHeaderBytes = 12;
inline constexpr std::size_t kBlockLengthBytes = 4;
inline constexpr std::size_t kBlockMultiple = 8;  // block sizes and partial blocks are multiples of 8 elements

// cd_values[4] of the filter.
enum class BlockCompression : unsigned { lz4 = 2, zstd = 3 };

// Default block size in elements for an element size: max(floor(8192 / elem_size / 8) * 8, 128).
QGPU_HD inline std::size_t default_block_elems(std::size_t elem_size) {
  const std::size_t b = 8192 / elem_size / kBlockMultiple * kBlockMultiple;
  return b < 128 ? 128 : b;
}

// Where the blocks and the verbatim tail of one chunk's frame lie (in elements).
struct ChunkGeometry {
  std::size_t elem_size = 2;
  std::size_t frame_elems = 0;
  std::size_t block_elems = 0;

  QGPU_HD std::size_t full_blocks() const { return frame_elems / block_elems; }
  // Elements of the partial block: (n % block) rounded down to 8; 0 when there is none.
  QGPU_HD std::size_t partial_block_elems() const {
    const std::size_t rem = frame_elems % block_elems;
    return rem - rem % kBlockMultiple;
  }
  QGPU_HD std::size_t blocks() const { return full_blocks() + (partial_block_elems() > 0 ? 1 : 0); }
  QGPU_HD std::size_t block_elems_at(std::size_t k) const {
    return k < full_blocks() ? block_elems : partial_block_elems();
  }
  QGPU_HD std::size_t tail_elems() const { return frame_elems % kBlockMultiple; }
};

// Walks the block framing of one chunk in order, for the encoder (writing) and the decoder (reading) alike:
//   for (BlockCursor b(g); !b.done(); b.next(len)) { ... b.length_at() ... b.data_at() ... }
// length_at: the chunk offset of block k's 4-byte length field; data_at: of its compressed bytes; frame_offset: the
// byte offset of its decoded elements in the frame. After the last block, length_at() is where the tail begins.
struct BlockCursor {
  ChunkGeometry g;
  std::size_t k = 0;
  std::size_t pos = kChunkHeaderBytes;

  QGPU_HD explicit BlockCursor(const ChunkGeometry& geometry) : g(geometry) {}
  QGPU_HD bool done() const { return k >= g.blocks(); }
  QGPU_HD std::size_t elems() const { return g.block_elems_at(k); }
  QGPU_HD std::size_t raw_bytes() const { return elems() * g.elem_size; }
  QGPU_HD std::size_t frame_offset() const { return k * g.block_elems * g.elem_size; }
  QGPU_HD std::size_t length_at() const { return pos; }
  QGPU_HD std::size_t data_at() const { return pos + kBlockLengthBytes; }
  QGPU_HD void next(std::size_t compressed_len) {
    pos += kBlockLengthBytes + compressed_len;
    ++k;
  }
};

QGPU_HD inline std::uint32_t read_be32(const std::uint8_t* p) {
  return (std::uint32_t(p[0]) << 24) | (std::uint32_t(p[1]) << 16) | (std::uint32_t(p[2]) << 8) | p[3];
}
QGPU_HD inline std::uint64_t read_be64(const std::uint8_t* p) {
  return (std::uint64_t(read_be32(p)) << 32) | read_be32(p + 4);
}
QGPU_HD inline void write_be32(std::uint8_t* p, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = std::uint8_t(v >> (8 * (3 - i)));
}
QGPU_HD inline void write_be64(std::uint8_t* p, std::uint64_t v) {
  write_be32(p, std::uint32_t(v >> 32));
  write_be32(p + 4, std::uint32_t(v));
}

}  // namespace qgpu::io::codec
