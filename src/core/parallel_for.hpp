#pragma once
// f(i) for i in [0, n) on every host core: contiguous ranges, one per thread (at most 64 threads).
#include <algorithm>
#include <cstddef>
#include <thread>
#include <vector>

namespace qgpu {

template <class F>
void parallel_for(std::size_t n, F&& f, std::size_t min_per_thread = 1) {
  const std::size_t threads = std::clamp<std::size_t>(std::thread::hardware_concurrency(), 1, 64);
  const std::size_t per = std::max<std::size_t>(min_per_thread, (n + threads - 1) / threads);
  if (n <= per) {
    for (std::size_t i = 0; i < n; ++i) f(i);
    return;
  }
  std::vector<std::thread> pool;
  for (std::size_t i0 = 0; i0 < n; i0 += per)
    pool.emplace_back([&f, i0, i1 = std::min(n, i0 + per)] {
      for (std::size_t i = i0; i < i1; ++i) f(i);
    });
  for (auto& t : pool) t.join();
}

}  // namespace qgpu
