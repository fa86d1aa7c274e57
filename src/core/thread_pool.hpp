#pragma once
// One process-wide set of waiting host threads for short parallel loops on the load path: starting 15 threads for
// each batch's reads cost ~0.7 ms a batch (H100 machine, s21c: a batch's read took 0.87 ms for 3584 frames and 2.17 ms
// for 30208), most of a small first batch, which the GPU decode waits for.
#include <algorithm>
#include <atomic>
#include <cstddef>
#include <exception>
#include <functional>
#include <vector>

namespace qgpu {

// Runs `work` on the calling thread and on up to `threads` - 1 of the pool's threads at once, and returns when every
// run of it that started has returned. `work` is a loop that takes its items from shared state (an atomic counter)
// until none are left, so the caller alone finishes it when the pool is busy with another caller's work; a pool
// thread that becomes free only after the caller finished does not run it. `work` must not throw. In a forked child
// (the pool's threads are not there) the caller runs it alone.
void run_on_pool(unsigned threads, const std::function<void()>& work);

// f(i) for every i in [0, n), each i taken by the next free thread of up to max_threads (the caller and the pool's),
// with the errors of a sequential loop over i: every i runs, and the exception of the lowest failing i is rethrown
// once all have returned (f(i) is one block of a loop that stops at its own first error).
template <class F> void pool_for_first_error(std::size_t n, F&& f, unsigned max_threads) {
  std::vector<std::exception_ptr> errors(n);
  std::atomic<std::size_t> next{0};
  run_on_pool(unsigned(std::min<std::size_t>(max_threads, n)), [&] {
    for (std::size_t i; (i = next.fetch_add(1)) < n;) {
      try {
        f(i);
      } catch (...) {
        errors[i] = std::current_exception();
      }
    }
  });
  for (const auto& e : errors)
    if (e) std::rethrow_exception(e);
}

}  // namespace qgpu
