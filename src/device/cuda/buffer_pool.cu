#include <cuda_runtime.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

#include "device/cuda/buffer_pool.hpp"
#include "device/cuda/cuda_check.hpp"

namespace qgpu {

namespace {

struct BufferPool {
  std::mutex m;
  std::map<std::pair<int, std::size_t>, std::vector<DeviceBuffer>> free;  // (device, bytes)
  std::map<int, std::size_t> idle_bytes;                                  // per device
};

// Never destroyed: no cudaFree after the CUDA runtime is torn down at exit.
BufferPool& pool() {
  static BufferPool* p = new BufferPool;
  return *p;
}

// DeviceBuffer's reclaimer: frees the idle buffers of the current device.
bool reclaim_idle() {
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) return false;
  std::vector<DeviceBuffer> freed;
  {
    std::lock_guard<std::mutex> lock(pool().m);
    for (auto it = pool().free.begin(); it != pool().free.end();) {
      if (it->first.first == device) {
        for (auto& b : it->second) freed.push_back(std::move(b));
        it = pool().free.erase(it);
      } else {
        ++it;
      }
    }
    pool().idle_bytes[device] = 0;
  }
  return !freed.empty();  // freed here, outside the lock
}

// An idle buffer of exactly `bytes` on `device`, or a new one.
DeviceBuffer take(int device, std::size_t bytes) {
  static const bool registered = (add_memory_reclaimer(&reclaim_idle), true);
  (void)registered;
  {
    std::lock_guard<std::mutex> lock(pool().m);
    auto it = pool().free.find({device, bytes});
    if (it != pool().free.end() && !it->second.empty()) {
      DeviceBuffer b = std::move(it->second.back());
      it->second.pop_back();
      pool().idle_bytes[device] -= bytes;
      return b;
    }
  }
  return DeviceBuffer(bytes);
}

// Keeps `b` idle (or frees it when the pool is full).
void give(int device, DeviceBuffer&& b) {
  if (b.bytes() == 0) return;
  DeviceBuffer freed;  // destroyed after the lock
  std::lock_guard<std::mutex> lock(pool().m);
  std::size_t& idle = pool().idle_bytes[device];
  if (idle + b.bytes() > pool_idle_cap()) {
    freed = std::move(b);
    return;
  }
  idle += b.bytes();
  pool().free[{device, b.bytes()}].push_back(std::move(b));
}

}  // namespace

LeasedBuffer::LeasedBuffer(std::size_t bytes) : device_(current_device()), buffer_(take(device_, bytes)) {}

LeasedBuffer::~LeasedBuffer() { give(device_, std::move(buffer_)); }

std::shared_ptr<DeviceBuffer> pooled_buffer(std::size_t bytes) {
  const int device = current_device();
  return std::shared_ptr<DeviceBuffer>(new DeviceBuffer(take(device, bytes)), [device](DeviceBuffer* b) {
    give(device, std::move(*b));
    delete b;
  });
}

namespace {

struct KeptResidents {
  std::mutex m;
  std::map<int, DeviceBuffer> kept;  // per device: the latest released resident
};

// Never destroyed (as the pool): a dataset released at exit keeps its memory until the process ends.
KeptResidents& residents() {
  static KeptResidents* k = new KeptResidents;
  return *k;
}

bool keep_residents() {
  const char* v = std::getenv("QGPU_KEEP_RESIDENT");
  return !(v && std::strcmp(v, "0") == 0);
}

// The kept resident of `device` moved out (freed by the caller's scope, outside the lock).
DeviceBuffer take_resident(int device) {
  std::lock_guard<std::mutex> lock(residents().m);
  const auto it = residents().kept.find(device);
  if (it == residents().kept.end()) return DeviceBuffer();
  DeviceBuffer b = std::move(it->second);
  residents().kept.erase(it);
  return b;
}

// DeviceBuffer's reclaimer: frees the kept resident of the current device.
bool reclaim_resident() {
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) return false;
  return take_resident(device).bytes() > 0;
}

std::shared_ptr<DeviceBuffer> kept_on_release(int device, DeviceBuffer&& b) {
  static const bool registered = (add_memory_reclaimer(&reclaim_resident), true);
  (void)registered;
  return std::shared_ptr<DeviceBuffer>(new DeviceBuffer(std::move(b)), [device](DeviceBuffer* p) {
    DeviceBuffer older;  // the one it replaces (or p's own memory when none is kept): freed after the lock
    if (p->bytes() > 0 && keep_residents()) {
      std::lock_guard<std::mutex> lock(residents().m);
      DeviceBuffer& slot = residents().kept[device];
      older = std::exchange(slot, std::move(*p));
    }
    delete p;
  });
}

}  // namespace

std::shared_ptr<DeviceBuffer> take_kept_resident(std::size_t bytes) {
  const int device = current_device();
  {
    std::lock_guard<std::mutex> lock(residents().m);
    const auto it = residents().kept.find(device);
    if (it == residents().kept.end() || it->second.bytes() != bytes || bytes == 0) return nullptr;
  }
  DeviceBuffer b = take_resident(device);
  if (b.bytes() != bytes) return nullptr;  // (taken meanwhile by another thread's load: freed here)
  return kept_on_release(device, std::move(b));
}

std::shared_ptr<DeviceBuffer> resident_buffer(std::size_t bytes) {
  if (auto kept = take_kept_resident(bytes)) return kept;
  const int device = current_device();
  (void)take_resident(device);  // another size: its room goes to this one
  return kept_on_release(device, DeviceBuffer(bytes));
}

std::size_t kept_resident_bytes() {
  const int device = current_device();
  std::lock_guard<std::mutex> lock(residents().m);
  const auto it = residents().kept.find(device);
  return it == residents().kept.end() ? 0 : it->second.bytes();
}

void release_kept_resident() { (void)take_resident(current_device()); }

std::size_t pool_idle_cap() {
  static const std::size_t cap = [] {  // (one size for every device: the first one asked decides)
    std::size_t free = 0, total = 0;
    if (cudaMemGetInfo(&free, &total) != cudaSuccess) return std::size_t(1) << 30;
    return std::clamp(total / 32, std::size_t(1) << 30, std::size_t(4) << 30);
  }();
  return cap;
}

std::size_t pooled_idle_bytes() {
  const int device = current_device();
  std::lock_guard<std::mutex> lock(pool().m);
  const auto it = pool().idle_bytes.find(device);
  return it == pool().idle_bytes.end() ? 0 : it->second;
}

}  // namespace qgpu
