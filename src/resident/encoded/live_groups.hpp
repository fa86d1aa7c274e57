#pragma once
// Which groups of 32 adjacent detector pixels hold any nonzero count in each tile of a batch of frames: the GPU
// decoder marks them as it writes the frames (the bits come from the words it already holds), and the CUDA encoder
// then visits only those groups (a group that is zero over a whole tile has empty streams: nothing needs to read it
// again).
//
// Bit g % 32 of word t * words_per_tile + g / 32 is set when pixel group g (pixels 32 g .. 32 g + 31) is nonzero
// somewhere in frames [t * tile, t * tile + tile) of the batch. A set bit for an all-zero group only costs time
// (the encoder writes the same empty streams); a clear bit for a nonzero group would lose counts, so every writer
// of frames that the encoder reads with these bits must mark what it writes. Frames of frame_pixels % 32 != 0
// pixels have no groups (a group would straddle two frames): no bits then.
#include <cstddef>
#include <cstdint>

#include "core/hd.hpp"

namespace qgpu::encoded {

inline constexpr std::uint32_t kGroupPixels = 32;

struct LiveGroups {
  std::uint32_t* bits = nullptr;  // device; null: no marks (the encoder visits every group)
  std::uint32_t tile = 0;         // frames per tile (the encoder's layout.tile)
  std::size_t words_per_tile = 0;  // ceil(frame_pixels / 32 / 32)

  static std::size_t words_for(std::size_t frame_pixels) {
    return (frame_pixels / kGroupPixels + 31) / 32;
  }
  // Words for `frames` frames (the bitmap of a batch).
  static std::size_t words_for(std::size_t frame_pixels, std::size_t frames, std::uint32_t tile) {
    return (frames + tile - 1) / tile * words_for(frame_pixels);
  }
  static bool applies(std::size_t frame_pixels) { return frame_pixels % kGroupPixels == 0; }

#if defined(__CUDACC__)
  // Marks group `group` of frame `frame` (a plain read first: once a tile's group is marked, the other frames of the
  // tile need no atomic).
  __device__ void mark(std::size_t frame, std::size_t group) const {
    std::uint32_t* w = bits + frame / tile * words_per_tile + group / 32;
    const std::uint32_t bit = 1u << (group % 32);
    if (!(*w & bit)) atomicOr(w, bit);
  }
#endif
};

}  // namespace qgpu::encoded
