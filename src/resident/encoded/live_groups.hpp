#pragma once
// Which groups of 32 adjacent detector pixels hold any nonzero count in each chunk of 16 frames of each tile of a
// batch: the GPU decoder marks them as it writes the frames (the bits come from the words it already holds), and the
// CUDA encoder then visits only the groups marked somewhere in a tile (a group that is zero over a whole tile has
// empty streams: nothing needs to read it again), and in those reads only the marked chunks (the dark field's
// streams are zero in most chunks of 16 positions: reading them is most of an unmarked encoder's memory traffic).
//
// A tile's marks are words_per_group(tile) words per group, group g of tile t at word t * words_per_tile +
// g * words_per_group: bit c % 32 of its word c / 32 is set when the group is nonzero somewhere in frames
// [t * tile + 16 c, t * tile + 16 c + 16) of the batch. A set bit for an all-zero chunk only costs time (the encoder
// reads zeros); a clear bit for a nonzero chunk would lose counts, so every writer of frames that the encoder reads
// with these bits must mark what it writes. Frames of frame_pixels % 32 != 0 pixels have no groups (a group would
// straddle two frames): no bits then.
#include <cstddef>
#include <cstdint>

#include "core/hd.hpp"

namespace qgpu::encoded {

inline constexpr std::uint32_t kGroupPixels = 32;
inline constexpr std::uint32_t kChunkFrames = 16;  // frames per mark bit: the encoder's statistics chunk

struct LiveGroups {
  std::uint32_t* bits = nullptr;  // device; null: no marks (the encoder visits every group)
  std::uint32_t tile = 0;         // frames per tile (the encoder's layout.tile)
  std::size_t words_per_tile = 0;  // words_for(frame_pixels, tile)
  // Optional (device, one per frame of the batch, zeroed): the decoder adds each frame's sum of counts as it writes
  // it (popcounts of the bit planes it holds), so that the encoder's statistics pass need not sum the frames across
  // its lanes. Every writer of the frames adds what it writes (and the pixel mask subtracts what it zeroes).
  unsigned long long* totals = nullptr;

  QGPU_HD static std::size_t words_per_group(std::uint32_t tile) {
    return (std::size_t{tile} + kChunkFrames * 32 - 1) / (kChunkFrames * 32);
  }
  // Words of one tile.
  static std::size_t words_for(std::size_t frame_pixels, std::uint32_t tile) {
    return frame_pixels / kGroupPixels * words_per_group(tile);
  }
  // Words for `frames` frames (the bitmap of a batch).
  static std::size_t words_for(std::size_t frame_pixels, std::size_t frames, std::uint32_t tile) {
    return (frames + tile - 1) / tile * words_for(frame_pixels, tile);
  }
  static bool applies(std::size_t frame_pixels) { return frame_pixels % kGroupPixels == 0; }

  // The word and bit of group `group` in frame `frame` (host and device: the tests build marks with them).
  QGPU_HD static std::size_t word_of(std::size_t frame, std::size_t group, std::uint32_t tile,
                                     std::size_t words_per_tile) {
    return frame / tile * words_per_tile + group * words_per_group(tile) + frame % tile / kChunkFrames / 32;
  }
  QGPU_HD static std::uint32_t bit_of(std::size_t frame, std::uint32_t tile) {
    return 1u << (frame % tile / kChunkFrames % 32);
  }

#if defined(__CUDACC__)
  // Marks group `group` of frame `frame` (a plain read first: once a chunk's group is marked, the other frames of
  // the chunk need no atomic).
  __device__ void mark(std::size_t frame, std::size_t group) const {
    std::uint32_t* w = bits + word_of(frame, group, tile, words_per_tile);
    const std::uint32_t bit = bit_of(frame, tile);
    if (!(*w & bit)) atomicOr(w, bit);
  }
#endif
};

// The chunk marks of one group in one tile (its words_per_group words), as the stream encoder's chunk predicate
// (AllChunks in stream_codec.hpp): whether chunk c may hold a nonzero value. w null: every chunk may.
struct ChunkMarks {
  const std::uint32_t* w = nullptr;
  QGPU_HD bool operator()(std::uint32_t c) const { return !w || ((w[c >> 5] >> (c & 31u)) & 1u); }
};

}  // namespace qgpu::encoded
