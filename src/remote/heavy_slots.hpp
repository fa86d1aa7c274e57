#pragma once
// A cap on concurrent heavy requests (mask bodies, computations, frame windows): a request waits briefly for a
// slot, then is answered 503 with Retry-After, so a burst cannot push the process into gigabytes of memory.
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <mutex>

namespace qgpu::remote {

class HeavySlots {
 public:
  HeavySlots(std::size_t slots, std::chrono::milliseconds wait) : free_(slots), wait_(wait) {}

  // Takes a slot, waiting at most the configured time; false when none came free.
  bool acquire() {
    std::unique_lock<std::mutex> lock(m_);
    if (!cv_.wait_for(lock, wait_, [this] { return free_ > 0; })) return false;
    --free_;
    return true;
  }
  void release() {
    {
      std::lock_guard<std::mutex> lock(m_);
      ++free_;
    }
    cv_.notify_one();
  }
  std::size_t free_slots() const {
    std::lock_guard<std::mutex> lock(m_);
    return free_;
  }

  // Holds a slot for a scope (taken() false when the wait ran out).
  class Slot {
   public:
    explicit Slot(HeavySlots& s) : s_(s), taken_(s.acquire()) {}
    ~Slot() {
      if (taken_) s_.release();
    }
    Slot(const Slot&) = delete;
    Slot& operator=(const Slot&) = delete;
    bool taken() const { return taken_; }

   private:
    HeavySlots& s_;
    bool taken_;
  };

 private:
  mutable std::mutex m_;
  std::condition_variable cv_;
  std::size_t free_;
  std::chrono::milliseconds wait_;
};

}  // namespace qgpu::remote
