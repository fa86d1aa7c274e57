#pragma once
// Device buffers reused between calls: cudaMalloc / cudaFree of megabytes cost up to milliseconds each, and
// cudaFree synchronises the device. A LeasedBuffer takes a free buffer of exactly that size on the current device
// from a process-wide pool (or allocates one) and gives it back at the end of its scope; any thread may reuse it
// (iDPC in `qgpu serve` runs on any of 64 connection threads). Idle buffers are kept up to kPoolIdleBytes per
// device; beyond that a returned buffer is freed, and an allocation that finds too little device memory frees the
// idle ones first (add_memory_reclaimer). Contents are undefined on lease.
#include <cstddef>

#include "device/cuda/device_buffer.hpp"

namespace qgpu {

inline constexpr std::size_t kPoolIdleBytes = std::size_t(512) << 20;

class LeasedBuffer {
 public:
  explicit LeasedBuffer(std::size_t bytes);
  ~LeasedBuffer();
  LeasedBuffer(const LeasedBuffer&) = delete;
  LeasedBuffer& operator=(const LeasedBuffer&) = delete;

  void* data() const { return buffer_.data(); }
  template <class T> T* as() const { return buffer_.as<T>(); }
  std::size_t bytes() const { return buffer_.bytes(); }
  DeviceBuffer& buffer() { return buffer_; }
  const DeviceBuffer& buffer() const { return buffer_; }

 private:
  int device_ = 0;
  DeviceBuffer buffer_;
};

// Bytes held idle in the pool on the current device (for tests and diagnostics).
std::size_t pooled_idle_bytes();

}  // namespace qgpu
