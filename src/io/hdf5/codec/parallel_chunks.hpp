#pragma once
// Runs work(i) for i in [0, n) on `threads` threads (0 = hardware concurrency) that claim indices in increasing
// order from a shared counter; the calling thread is one of them. work must not throw.
#include <algorithm>
#include <atomic>
#include <cstddef>
#include <thread>
#include <vector>

namespace qgpu::io::codec {

inline unsigned resolve_threads(unsigned threads) {
  return threads != 0 ? threads : std::max(1u, std::thread::hardware_concurrency());
}

template <class Work>
void parallel_indices(std::size_t n, unsigned threads, Work&& work) {
  const std::size_t t = std::min<std::size_t>(resolve_threads(threads), n);
  std::atomic<std::size_t> next{0};
  auto run = [&] {
    for (std::size_t i = next.fetch_add(1, std::memory_order_relaxed); i < n;
         i = next.fetch_add(1, std::memory_order_relaxed))
      work(i);
  };
  std::vector<std::jthread> pool;
  pool.reserve(t > 0 ? t - 1 : 0);
  for (std::size_t k = 1; k < t; ++k) pool.emplace_back(run);
  run();
}

}  // namespace qgpu::io::codec
