#pragma once
// The bounded queue between a receiver's socket thread and its parser threads (live/receive.cpp), and the turnstile
// that hands the parsed batches to the sink in the order they were received.
//
// MessageQueue<T>: at most max_items items and max_bytes bytes wait (an empty queue always takes one item, however
// large). push() waits up to `wait` for room, then drops the item and counts it; after a drop, later pushes that find
// no room drop at once until the consumer has emptied half the queue (a stalled consumer costs the socket one wait,
// then the socket is drained, never blocked). Each item carries the number of items dropped just before it, so the consumer names the gap in stream
// order. pop() takes up to n items with a batch number (0, 1, 2 ... in pop order); it returns false once the queue
// is closed and empty; given a linger it first waits that long for n items. close() wakes every waiter: nothing
// waits on a closed queue.
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <utility>
#include <vector>

namespace qgpu::live {

template <class T> class MessageQueue {
 public:
  struct Slot {
    T item;
    std::size_t bytes = 0;
    std::uint64_t dropped_before = 0;  // items dropped between the previous item and this one
  };

  MessageQueue(std::size_t max_items, std::size_t max_bytes) : max_items_(max_items ? max_items : 1), max_bytes_(max_bytes) {}

  // True when queued; false when dropped (the queue stayed full for `wait`, or was already full after a drop) or
  // closed (not counted as a drop).
  bool push(T&& item, std::size_t bytes, std::chrono::milliseconds wait) {
    std::unique_lock lk(mutex_);
    if (closed_) return false;
    if (!room(bytes)) {
      if (!dropping_) {
        ++waits_;
        room_cv_.wait_for(lk, wait, [&] { return closed_ || room(bytes); });
        if (closed_) return false;
      }
      if (!room(bytes)) {
        dropping_ = true;
        ++dropped_;
        ++pending_drops_;
        return false;
      }
    }
    slots_.push_back(Slot{std::move(item), bytes, pending_drops_});
    pending_drops_ = 0;
    bytes_ += bytes;
    peak_items_ = std::max(peak_items_, slots_.size());
    peak_bytes_ = std::max(peak_bytes_, bytes_);
    const bool wake_idle = idle_consumers_ && slots_.size() == 1;
    const bool wake_filling = filling_consumers_ && slots_.size() >= fill_target_;
    lk.unlock();
    if (wake_idle) idle_cv_.notify_one();
    if (wake_filling) fill_cv_.notify_one();
    return true;
  }

  // Up to n items (at least one) into `out` (cleared first) and their batch number; waits while the queue is empty
  // and open, then, given a linger, up to linger more for n items (a batch per wake, not a wake per item: the
  // producer signals only the first item and the n-th). False when closed and empty.
  bool pop(std::size_t n, std::vector<Slot>& out, std::uint64_t* batch,
           std::chrono::microseconds linger = std::chrono::microseconds(0)) {
    out.clear();
    n = std::max<std::size_t>(n, 1);
    std::unique_lock lk(mutex_);
    if (slots_.empty() && !closed_) {
      ++idle_consumers_;
      idle_cv_.wait(lk, [&] { return closed_ || !slots_.empty(); });
      --idle_consumers_;
    }
    if (linger.count() > 0 && slots_.size() < n && !closed_) {
      ++filling_consumers_;
      fill_target_ = n;
      fill_cv_.wait_for(lk, linger, [&] { return closed_ || slots_.size() >= n; });
      --filling_consumers_;
    }
    if (slots_.empty()) return false;
    while (!slots_.empty() && out.size() < n) {
      bytes_ -= slots_.front().bytes;
      out.push_back(std::move(slots_.front()));
      slots_.pop_front();
    }
    *batch = batches_++;
    if (dropping_ && 2 * slots_.size() <= max_items_ && 2 * bytes_ <= max_bytes_) dropping_ = false;
    const bool more = !slots_.empty() && idle_consumers_;
    lk.unlock();
    room_cv_.notify_one();
    if (more) idle_cv_.notify_one();
    return true;
  }

  void close() {
    {
      std::lock_guard lk(mutex_);
      closed_ = true;
    }
    idle_cv_.notify_all();
    fill_cv_.notify_all();
    room_cv_.notify_all();
  }

  // Items dropped after the last one queued (not carried by any item): the consumer names them at the end.
  std::uint64_t take_pending_drops() {
    std::lock_guard lk(mutex_);
    return std::exchange(pending_drops_, 0);
  }
  std::uint64_t dropped() const { std::lock_guard lk(mutex_); return dropped_; }
  std::uint64_t waits() const { std::lock_guard lk(mutex_); return waits_; }  // pushes that found it full
  std::size_t size() const { std::lock_guard lk(mutex_); return slots_.size(); }
  std::size_t peak_items() const { std::lock_guard lk(mutex_); return peak_items_; }
  std::size_t peak_bytes() const { std::lock_guard lk(mutex_); return peak_bytes_; }

 private:
  bool room(std::size_t bytes) const {
    return slots_.empty() || (slots_.size() < max_items_ && bytes_ + bytes <= max_bytes_);
  }
  const std::size_t max_items_, max_bytes_;
  mutable std::mutex mutex_;
  std::condition_variable idle_cv_, fill_cv_, room_cv_;  // consumers: waiting for an item / for a full batch
  std::deque<Slot> slots_;
  std::size_t bytes_ = 0, peak_items_ = 0, peak_bytes_ = 0;
  std::size_t idle_consumers_ = 0, filling_consumers_ = 0, fill_target_ = 1;
  std::uint64_t batches_ = 0, dropped_ = 0, pending_drops_ = 0, waits_ = 0;
  bool closed_ = false, dropping_ = false;
};

// Hands batches to one consumer at a time in batch-number order: wait(k) returns when batches 0..k-1 are done (or
// the turnstile is cancelled: false); done(k) lets batch k+1 go.
class Turnstile {
 public:
  bool wait(std::uint64_t k) {
    std::unique_lock lk(mutex_);
    cv_.wait(lk, [&] { return cancelled_ || next_ == k; });
    return !cancelled_;
  }
  void done(std::uint64_t k) {
    {
      std::lock_guard lk(mutex_);
      next_ = k + 1;
    }
    cv_.notify_all();
  }
  void cancel() {
    {
      std::lock_guard lk(mutex_);
      cancelled_ = true;
    }
    cv_.notify_all();
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  std::uint64_t next_ = 0;
  bool cancelled_ = false;
};

}  // namespace qgpu::live
