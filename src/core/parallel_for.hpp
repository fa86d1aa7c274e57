#pragma once
// f(i) for i in [0, n) on every host core: contiguous ranges, one per thread (at most 64 threads). f must not throw
// (parallel_for_first_error below: for a loop that may).
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstddef>
#include <exception>
#include <system_error>
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

namespace qgpu {

// f(i) for i in [0, n) on up to max_threads threads (contiguous blocks of at least min_per_thread, in order), with
// the errors of a sequential loop: each block stops at its first exception, and the exception of the lowest
// block is rethrown after every thread has joined, so the caller sees the error of the first failing i.
template <class F>
void parallel_for_first_error(std::size_t n, F&& f, std::size_t max_threads, std::size_t min_per_thread = 1) {
  const std::size_t hw = std::max<std::size_t>(1, std::thread::hardware_concurrency());
  const std::size_t threads =
      std::clamp<std::size_t>(std::min(hw, n / std::max<std::size_t>(1, min_per_thread)), 1, std::max<std::size_t>(1, max_threads));
  if (threads <= 1) {
    for (std::size_t i = 0; i < n; ++i) f(i);
    return;
  }
  const std::size_t per = (n + threads - 1) / threads;
  std::vector<std::exception_ptr> errors(threads);
  auto block = [&](std::size_t t) {
    try {
      for (std::size_t i = t * per, end = std::min(n, (t + 1) * per); i < end; ++i) f(i);
    } catch (...) {
      errors[t] = std::current_exception();
    }
  };
  std::vector<std::thread> pool;
  for (std::size_t t = 1; t < threads; ++t) {
    try {
      pool.emplace_back(block, t);
    } catch (const std::system_error&) {  // no thread to be had: this block here
      block(t);
    }
  }
  block(0);
  for (auto& t : pool) t.join();
  for (const auto& e : errors)
    if (e) std::rethrow_exception(e);
}

}  // namespace qgpu

namespace qgpu {

// f(i0, i1) over [0, n) cut into blocks of `block` (the last shorter), the blocks spread over the host cores. The
// cut does not depend on the number of cores: a reduction that keeps one partial per block and adds the partials in
// order gives the same bits on every machine.
inline constexpr std::size_t kHostBlock = std::size_t{1} << 16;  // a block of a host loop over image pixels

template <class F>
void parallel_blocks(std::size_t n, std::size_t block, F&& f) {
  const std::size_t blocks = (n + block - 1) / block;
  parallel_for(blocks, [&](std::size_t b) { f(b * block, std::min(n, (b + 1) * block)); });
}

}  // namespace qgpu

namespace qgpu {

// Whether every value of a and b (the same length) is finite, checked on every core (the checks of the DPC and
// iDPC maps, 16.8M values each at 4096x4096).
inline bool all_finite(const std::vector<float>& a, const std::vector<float>& b) {
  std::atomic<bool> ok{true};
  parallel_blocks(a.size(), kHostBlock, [&](std::size_t i0, std::size_t i1) {
    for (std::size_t i = i0; i < i1; ++i)
      if (!std::isfinite(a[i]) || !std::isfinite(b[i])) {
        ok = false;
        return;
      }
  });
  return ok;
}

}  // namespace qgpu
