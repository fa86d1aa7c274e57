#pragma once
// Float data: NaN and +-inf values are set to 0 when they load, and counted (the load's provenance and metadata say
// how many: nonfinite_values). Every query then sums finite values; a detector's dead pixels stored as NaN do not
// turn every virtual image into NaN. Host twin of io/source/cuda/zero_nonfinite.cu.
#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "core/parallel_for.hpp"

namespace qgpu::io {

// Zeroes the non-finite values of v[0, n) on every host core; returns how many there were.
inline std::uint64_t zero_nonfinite_host(float* v, std::size_t n) {
  constexpr std::size_t kBlock = std::size_t(1) << 20;
  std::atomic<std::uint64_t> count{0};
  parallel_for((n + kBlock - 1) / kBlock, [&](std::size_t b) {
    std::uint64_t local = 0;
    for (std::size_t i = b * kBlock, end = std::min(n, i + kBlock); i < end; ++i)
      if (!std::isfinite(v[i])) {
        v[i] = 0.0f;
        ++local;
      }
    count += local;
  });
  return count;
}

namespace cuda {
// The same on a device array (synchronous: returns the count).
std::uint64_t zero_nonfinite(float* d_values, std::size_t n);
}  // namespace cuda

}  // namespace qgpu::io
