#pragma once
// Layout of a fuzz input for the bitshuffle host decoder: a 5-byte prefix choosing the dataset parameters, then the
// chunk bytes. Shared by the harness and the seed generator.
#include <cstddef>
#include <cstdint>

#include "io/hdf5/codec/bitshuffle_params.hpp"

namespace qgpu::fuzz {

inline constexpr std::size_t kPrefixBytes = 5;
inline constexpr std::size_t kElemSizes[4] = {1, 2, 4, 8};
inline constexpr std::size_t kBlocks[5] = {0, 8, 64, 256, 2048};  // 0 = the default for the element size

struct FuzzCase {
  io::codec::BitshuffleParams params;
  std::size_t frame_elems = 0;
};

// byte 0: element size index, byte 1: block index, byte 2: bit 0 zstd, bytes 3-4: frame elements (LE).
inline FuzzCase parse_prefix(const std::uint8_t* d) {
  FuzzCase c;
  c.params.elem_size = kElemSizes[d[0] % 4];
  const std::size_t b = kBlocks[d[1] % 5];
  c.params.block_elems = b ? b : io::codec::default_block_elems(c.params.elem_size);
  c.params.compression = (d[2] & 1) ? io::codec::BlockCompression::zstd : io::codec::BlockCompression::lz4;
  c.frame_elems = std::size_t(d[3]) | (std::size_t(d[4]) << 8);
  return c;
}

inline void write_prefix(std::uint8_t* d, std::size_t elem_index, std::size_t block_index, bool zstd,
                         std::size_t frame_elems) {
  d[0] = std::uint8_t(elem_index);
  d[1] = std::uint8_t(block_index);
  d[2] = zstd ? 1 : 0;
  d[3] = std::uint8_t(frame_elems);
  d[4] = std::uint8_t(frame_elems >> 8);
}

}  // namespace qgpu::fuzz
