#pragma once
// Host byte arrays that are not zero-filled when sized: a loaded dataset is written in full by the decoder threads
// (which also fault its pages in, in parallel), so zero-filling 19 GB first on one thread would only cost seconds.
#include <sys/mman.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/parallel_for.hpp"

namespace qgpu {

template <class T> struct DefaultInitAllocator : std::allocator<T> {
  template <class U> struct rebind {
    using other = DefaultInitAllocator<U>;
  };
  DefaultInitAllocator() = default;
  template <class U> DefaultInitAllocator(const DefaultInitAllocator<U>&) noexcept {}
  template <class U> void construct(U* p) noexcept { ::new (static_cast<void*>(p)) U; }  // default-init: no zeroing
  template <class U, class... Args> void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
};

// Bytes of a host-resident dataset (resize leaves new bytes uninitialised; assign/insert initialise as usual).
using HostBytes = std::vector<std::uint8_t, DefaultInitAllocator<std::uint8_t>>;

inline bool operator==(const HostBytes& a, const std::vector<std::uint8_t>& b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin());
}

// Advises 2 MiB pages for the whole 2 MiB blocks of [p, p + bytes) (transparent huge pages in "madvise" or "always"
// mode): fresh memory is then faulted in 512 times less often. Advice only: nothing changes where it is not taken.
inline void advise_huge_pages(void* p, std::size_t bytes) {
  constexpr std::uintptr_t kHuge = std::uintptr_t(2) << 20;
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  const std::uintptr_t lo = (a + kHuge - 1) & ~(kHuge - 1), hi = (a + bytes) & ~(kHuge - 1);
  if (hi > lo) madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_HUGEPAGE);
}

// A zeroed vector of n values whose storage was advised huge pages before the zeroing touched it: a product's host
// result (a 2048x2048 uint64 image is 33.5 MB) costs a quarter of the page faults' time of a plain vector(n, 0)
// (17 -> 4 ms here on one core; without the advice a 4096^2 BF took 101.8 ms instead of 43.7, s20c). (Faulting the
// pages in with MADV_POPULATE_WRITE on 16 threads made the 4096^2 basis answers 49-68 ms on an H100, s19a: not kept;
// one write per page on every core, below, is what helped.)
// A vector of 16 MiB or more also has its pages faulted in on every core (one write per 4 KiB page) before the
// zeroing, which then runs over present pages: the kernel's zeroing of fresh pages was most of what a 4096x4096
// uint64 result cost on one core (its BF's host stage 31.3 -> 17.8 ms, the answer 36.1 -> 26.2 ms on an H100, s20e).
template <class T> std::vector<T> fresh_vector(std::size_t n) {
  std::vector<T> v;
  v.reserve(n);
  const std::size_t bytes = n * sizeof(T);
  advise_huge_pages(v.data(), bytes);
  if (bytes >= (std::size_t(16) << 20)) {
    auto* const base = reinterpret_cast<unsigned char*>(v.data());  // allocated storage, not yet values
    constexpr std::size_t kPage = 4096, kBlock = std::size_t(2) << 20;
    parallel_blocks(bytes, kBlock, [base](std::size_t b0, std::size_t b1) {
      for (std::size_t b = b0; b < b1; b += kPage) base[b] = 0;
    });
  }
  v.resize(n);
  return v;
}

}  // namespace qgpu
