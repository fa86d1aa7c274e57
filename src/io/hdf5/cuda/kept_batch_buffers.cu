#include <cuda_runtime.h>

#include <algorithm>
#include <deque>
#include <map>
#include <mutex>

#include "core/error.hpp"
#include "device/cuda/cuda_check.hpp"
#include "io/hdf5/cuda/kept_batch_buffers.hpp"

namespace qgpu::io::cuda {

namespace {

constexpr std::size_t kKeptCap = std::size_t{8} << 30;
constexpr std::size_t kRoomMargin = std::size_t{256} << 20;

struct Kept {
  std::mutex m;
  std::map<int, std::deque<DeviceBuffer>> buffers;  // per device, oldest first
};

// Never destroyed: no cudaFree after the CUDA runtime is torn down at exit.
Kept& kept() {
  static Kept* k = new Kept;
  return *k;
}

std::size_t bytes_of(const std::deque<DeviceBuffer>& q) {
  std::size_t n = 0;
  for (const auto& b : q) n += b.bytes();
  return n;
}

std::size_t cap_of_device() {
  std::size_t free = 0, total = 0;
  QGPU_CUDA(cudaMemGetInfo(&free, &total));
  return std::min(kKeptCap, total / 16);
}

// The kept buffers of the current device, moved out of the lock (freed by the caller's scope).
std::deque<DeviceBuffer> take_all(int device) {
  std::lock_guard<std::mutex> lock(kept().m);
  std::deque<DeviceBuffer> out;
  out.swap(kept().buffers[device]);
  return out;
}

// DeviceBuffer's reclaimer: frees the kept buffers of the current device.
bool reclaim_kept() {
  const std::deque<DeviceBuffer> freed = take_all(current_device());
  return !freed.empty();
}

}  // namespace

DeviceBuffer take_batch_buffer(std::size_t bytes) {
  if (bytes == 0) return DeviceBuffer();
  const int device = current_device();
  {
    std::lock_guard<std::mutex> lock(kept().m);
    auto& q = kept().buffers[device];
    const auto it = std::find_if(q.begin(), q.end(), [&](const DeviceBuffer& b) { return b.bytes() == bytes; });
    if (it != q.end()) {
      DeviceBuffer b = std::move(*it);
      q.erase(it);
      return b;
    }
  }
  make_room(bytes);
  return DeviceBuffer(bytes);  // (which frees the kept buffers and tries again when the device lacks the memory)
}

void keep_batch_buffer(DeviceBuffer&& b) {
  if (b.bytes() == 0) return;
  static const bool registered = (add_memory_reclaimer(&reclaim_kept), true);  // once, before anything is kept
  (void)registered;
  const std::size_t cap = cap_of_device();
  if (b.bytes() > cap) return;  // freed with b
  const int device = current_device();
  std::deque<DeviceBuffer> dropped;
  {
    std::lock_guard<std::mutex> lock(kept().m);
    auto& q = kept().buffers[device];
    q.push_back(std::move(b));
    while (bytes_of(q) > cap) {
      dropped.push_back(std::move(q.front()));
      q.pop_front();
    }
  }
}

std::size_t kept_batch_bytes() {
  const int device = current_device();
  std::lock_guard<std::mutex> lock(kept().m);
  return bytes_of(kept().buffers[device]);
}

void make_room(std::size_t bytes) {
  if (kept_batch_bytes() == 0) return;
  std::size_t free = 0, total = 0;
  QGPU_CUDA(cudaMemGetInfo(&free, &total));
  if (free >= bytes && free - bytes >= kRoomMargin) return;
  release_batch_buffers();
}

void release_batch_buffers() { (void)take_all(current_device()); }

}  // namespace qgpu::io::cuda
