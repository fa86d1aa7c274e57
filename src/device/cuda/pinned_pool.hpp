#pragma once
// Pinned (page-locked) host buffers kept for reuse by this process. They are slow to allocate (page locking, tens of
// ms for the loader's read slots), so released ones are kept for the next user (up to kPinnedPoolBytes in all);
// a request takes the smallest kept buffer that is large enough, or allocates one.
#include <cstddef>
#include <mutex>
#include <tuple>
#include <utility>
#include <vector>

namespace qgpu {

inline constexpr std::size_t kPinnedPoolBytes = std::size_t(1) << 30;

class PinnedPool {
 public:
  static PinnedPool& instance();
  // A buffer of at least max(bytes, 1) bytes and its size (DeviceError / OutOfMemory when it cannot be allocated).
  std::pair<void*, std::size_t> take(std::size_t bytes);
  // Gives a buffer from take() back: kept while the pool holds <= kPinnedPoolBytes, freed otherwise.
  void give(void* p, std::size_t bytes);

 private:
  PinnedPool() = default;
  ~PinnedPool() = default;  // never called: instance() is never destroyed
  std::mutex mu_;
  std::vector<std::pair<void*, std::size_t>> free_;
  std::size_t pooled_ = 0;
};

// A pinned buffer leased from the pool for a scope.
struct Pinned {
  void* p = nullptr;
  std::size_t bytes = 0;
  explicit Pinned(std::size_t n) { std::tie(p, bytes) = PinnedPool::instance().take(n); }
  ~Pinned() { PinnedPool::instance().give(p, bytes); }
  Pinned(const Pinned&) = delete;
  Pinned& operator=(const Pinned&) = delete;
  template <class T> T* as() { return static_cast<T*>(p); }
};

}  // namespace qgpu
