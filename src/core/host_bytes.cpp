#include "core/host_bytes.hpp"

#include <sys/mman.h>

#include <cstdint>

#include "core/parallel_for.hpp"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23  // Linux 5.14 (older headers lack the name; older kernels answer EINVAL)
#endif

namespace qgpu {

void populate_on_threads(void* p, std::size_t bytes) {
  constexpr std::uintptr_t kPage = 4096, kBlock = std::uintptr_t(2) << 20;
  const auto a = reinterpret_cast<std::uintptr_t>(p) & ~(kPage - 1);
  const auto end = reinterpret_cast<std::uintptr_t>(p) + bytes;
  if (bytes == 0) return;
  parallel_for(std::size_t((end - a + kBlock - 1) / kBlock), [&](std::size_t b) {
    const std::uintptr_t lo = a + b * kBlock, hi = std::min<std::uintptr_t>(end, lo + kBlock);
    ::madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_POPULATE_WRITE);  // advice: a failure changes nothing
  });
}

}  // namespace qgpu
