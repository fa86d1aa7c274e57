#pragma once
// Host memory of large results used again. A fresh result's pages cost the kernel's zeroing and a fault each: a
// 4096x4096 uint64 image (134 MB) took 16.8 ms of a 21.5 ms full-resolution BF (H100, s21c) where its sums kernel
// and download take a few. Front ends that are done with a result (the service once the body is made, a Python array
// when it is freed) give its vector back here, and the next result of the same size takes it: its pages are present.
// Vectors of 16 MiB or more are kept (QGPU_RECYCLE_FROM_BYTES=N: of N bytes or more, for tests), at most kKeptResults
// and kKeptResultBytes per value type (the oldest dropped; e.g. the five float images of a 4096x4096 CoM -> DPC ->
// iDPC); QGPU_RECYCLE_RESULTS=0 keeps none.
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>
#include <utility>
#include <vector>

#include "core/host_bytes.hpp"
#include "core/image.hpp"

namespace qgpu {

inline constexpr std::size_t kRecycleFromBytes = std::size_t(16) << 20;
inline constexpr std::size_t kKeptResults = 8;
inline constexpr std::size_t kKeptResultBytes = std::size_t(1) << 30;

namespace detail {

template <class T> struct KeptResults {
  std::mutex m;
  std::deque<std::vector<T>> kept;
};

// One list per value type for the whole process: defined in result_memory.cpp (explicit instantiations for the
// numeric types), so that the Python module, built with hidden symbols, shares the library's lists.
template <class T> KeptResults<T>& kept_results();

inline std::size_t recycle_from_bytes() {
  const char* v = std::getenv("QGPU_RECYCLE_FROM_BYTES");
  return v && *v ? std::strtoull(v, nullptr, 10) : kRecycleFromBytes;
}

inline bool recycle_results() {
  const char* v = std::getenv("QGPU_RECYCLE_RESULTS");
  return !(v && std::strcmp(v, "0") == 0);
}

}  // namespace detail

// n values whose contents are undefined: the caller writes every one (a download of the whole result). A vector given
// back with exactly n values when there is one, else fresh_vector<T>(n).
template <class T> std::vector<T> result_vector(std::size_t n) {
  if (n > 0 && n * sizeof(T) >= detail::recycle_from_bytes()) {
    auto& k = detail::kept_results<T>();
    std::lock_guard<std::mutex> lock(k.m);
    for (auto it = k.kept.rbegin(); it != k.kept.rend(); ++it) {
      if (it->size() != n) continue;
      std::vector<T> v = std::move(*it);
      k.kept.erase(std::next(it).base());
      return v;
    }
  }
  return fresh_vector<T>(n);
}

// Keeps v's memory for a later result_vector of its size (vectors below 16 MiB are freed as usual).
template <class T> void recycle_result(std::vector<T>&& v) {
  const std::size_t bytes = v.size() * sizeof(T);
  if (v.empty() || bytes < detail::recycle_from_bytes() || bytes > kKeptResultBytes || !detail::recycle_results())
    return;
  std::deque<std::vector<T>> dropped;  // freed after the lock
  auto& k = detail::kept_results<T>();
  std::lock_guard<std::mutex> lock(k.m);
  k.kept.push_back(std::move(v));
  std::size_t kept = 0;
  for (const auto& x : k.kept) kept += x.size() * sizeof(T);
  while (k.kept.size() > kKeptResults || kept > kKeptResultBytes) {
    kept -= k.kept.front().size() * sizeof(T);
    dropped.push_back(std::move(k.kept.front()));
    k.kept.pop_front();
  }
}

template <class T> void recycle_result(Image<T>&& img) { recycle_result(std::move(img.data)); }

inline void recycle_result(SumImage&& img) {
  img.visit([](auto& i) { recycle_result(std::move(i.data)); });
}

// Values kept for reuse of type T (tests and diagnostics).
template <class T> std::size_t kept_result_values() {
  auto& k = detail::kept_results<T>();
  std::lock_guard<std::mutex> lock(k.m);
  std::size_t n = 0;
  for (const auto& v : k.kept) n += v.size();
  return n;
}

}  // namespace qgpu
