#include <cuda_runtime.h>

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

}  // namespace

LeasedBuffer::LeasedBuffer(std::size_t bytes) {
  static const bool registered = (add_memory_reclaimer(&reclaim_idle), true);
  (void)registered;
  QGPU_CUDA(cudaGetDevice(&device_));
  {
    std::lock_guard<std::mutex> lock(pool().m);
    auto it = pool().free.find({device_, bytes});
    if (it != pool().free.end() && !it->second.empty()) {
      buffer_ = std::move(it->second.back());
      it->second.pop_back();
      pool().idle_bytes[device_] -= bytes;
      return;
    }
  }
  buffer_ = DeviceBuffer(bytes);
}

LeasedBuffer::~LeasedBuffer() {
  if (buffer_.bytes() == 0) return;
  std::lock_guard<std::mutex> lock(pool().m);
  std::size_t& idle = pool().idle_bytes[device_];
  if (idle + buffer_.bytes() > kPoolIdleBytes) return;  // freed by buffer_'s destructor
  idle += buffer_.bytes();
  pool().free[{device_, buffer_.bytes()}].push_back(std::move(buffer_));
}

std::size_t pooled_idle_bytes() {
  int device = 0;
  QGPU_CUDA(cudaGetDevice(&device));
  std::lock_guard<std::mutex> lock(pool().m);
  const auto it = pool().idle_bytes.find(device);
  return it == pool().idle_bytes.end() ? 0 : it->second;
}

}  // namespace qgpu
