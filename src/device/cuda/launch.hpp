#pragma once
// The one launch-size helper of the CUDA kernels: how many blocks cover `items` items at `per_block` items a block,
// with each caller's limits (a grid-stride kernel clamps to its own maximum; one item per thread must not clamp).
#include <algorithm>
#include <cstddef>
#include <string>

#include "core/error.hpp"

namespace qgpu {

inline constexpr std::size_t kMaxGridX = 2147483647;  // CUDA's limit on gridDim.x

// ceil(items / per_block), at least min_blocks. max_blocks > 0: clamped to it (grid-stride kernels: their loop
// covers the rest); max_blocks == 0: not clamped, and more than kMaxGridX blocks is an InvalidArgument (a kernel
// with one item a thread could not cover them). per_block must be > 0.
inline unsigned grid_blocks(std::size_t items, std::size_t per_block, std::size_t max_blocks = 0,
                            std::size_t min_blocks = 0) {
  std::size_t blocks = std::max((items + per_block - 1) / per_block, min_blocks);
  if (max_blocks > 0) {
    blocks = std::min(blocks, max_blocks);
  } else if (blocks > kMaxGridX) {
    throw InvalidArgument("CUDA launch: " + std::to_string(items) + " items need " + std::to_string(blocks) +
                          " blocks, more than the grid limit " + std::to_string(kMaxGridX));
  }
  return static_cast<unsigned>(blocks);
}

}  // namespace qgpu
