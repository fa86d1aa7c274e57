#pragma once
// Host byte arrays that are not zero-filled when sized: a loaded dataset is written in full by the decoder threads
// (which also fault its pages in, in parallel), so zero-filling 19 GB first on one thread would only cost seconds.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

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

}  // namespace qgpu
