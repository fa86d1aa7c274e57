// The process's pool of pinned host buffers (pinned_pool.hpp).
#include "device/cuda/pinned_pool.hpp"

#include <cuda_runtime.h>

#include <algorithm>

#include "device/cuda/cuda_check.hpp"

namespace qgpu {

// Never destroyed (as the cuFFT plan pool): a Pinned released during static destruction at exit (a loader still
// running on another thread, e.g. in Python) would otherwise lock a destroyed mutex; the driver releases the pinned
// memory with the process.
PinnedPool& PinnedPool::instance() {
  static PinnedPool* pool = new PinnedPool;
  return *pool;
}

std::pair<void*, std::size_t> PinnedPool::take(std::size_t bytes) {
  {
    std::lock_guard lock(mu_);
    auto best = free_.end();
    for (auto it = free_.begin(); it != free_.end(); ++it)
      if (it->second >= bytes && (best == free_.end() || it->second < best->second)) best = it;
    if (best != free_.end()) {
      const auto got = *best;
      free_.erase(best);
      pooled_ -= got.second;
      return got;
    }
  }
  void* p = nullptr;
  QGPU_CUDA(cudaMallocHost(&p, std::max<std::size_t>(bytes, 1)));
  return {p, std::max<std::size_t>(bytes, 1)};
}

void PinnedPool::give(void* p, std::size_t bytes) {
  std::lock_guard lock(mu_);
  if (pooled_ + bytes > kPinnedPoolBytes) {
    cudaFreeHost(p);
    return;
  }
  free_.emplace_back(p, bytes);
  pooled_ += bytes;
}

}  // namespace qgpu
