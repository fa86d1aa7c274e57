#pragma once
// Launch geometry of the display kernels: 256 threads, grid-stride loops over at most kMaxBlocks blocks.
#include <algorithm>
#include <climits>
#include <cstddef>
#include <string>

#include "core/error.hpp"
#include "device/cuda/launch.hpp"

namespace qgpu::display::cuda {

inline constexpr unsigned kThreads = 256;
inline constexpr std::size_t kMaxBlocks = 4096;

inline unsigned blocks_for(std::size_t n) {
  return grid_blocks(n, kThreads, kMaxBlocks, 1);  // device/cuda/launch.hpp
}

// CUB sort and cuFFT take int sizes; per-block histogram counters are 32-bit.
inline void require_int_size(std::size_t n, const char* what) {
  if (n > static_cast<std::size_t>(INT_MAX))
    throw InvalidArgument(std::string(what) + ": " + std::to_string(n) + " exceeds the CUDA backend limit of " +
                          std::to_string(INT_MAX));
}

}  // namespace qgpu::display::cuda
