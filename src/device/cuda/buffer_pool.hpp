#pragma once
// Device buffers reused between calls: cudaMalloc / cudaFree of megabytes cost up to milliseconds each, and
// cudaFree synchronises the device. A LeasedBuffer takes a free buffer of exactly that size on the current device
// from a process-wide pool (or allocates one) and gives it back at the end of its scope; any thread may reuse it
// (iDPC in `qgpu serve` runs on any of 64 connection threads). Idle buffers are kept up to pool_idle_cap() per
// device; beyond that a returned buffer is freed, and an allocation that finds too little device memory frees the
// idle ones first (add_memory_reclaimer). Contents are undefined on lease.
#include <cstddef>
#include <memory>

#include "device/cuda/device_buffer.hpp"

namespace qgpu {

// The idle cap of the current device: 1/32 of its memory, from 1 GiB to 4 GiB (a 4096x4096 iDPC leases 1.2 GB of
// padded fields and spectra: under a 1 GiB cap part of it was freed and allocated again at every call).
std::size_t pool_idle_cap();

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

// A device buffer of exactly `bytes` from the pool (or a new one) for a longer life than a scope: it goes back to the
// pool when its last owner lets go (an encoded resident's directories, totals and payload arena: the next resident of
// the same shape finds them without a cudaMalloc, which waited for the driver's release of a large dataset freed
// shortly before: milliseconds of the load's setup, docs/history/benchmarks-2026-12.md).
std::shared_ptr<DeviceBuffer> pooled_buffer(std::size_t bytes);

// Bytes held idle in the pool on the current device (for tests and diagnostics; admission counts them as free).
std::size_t pooled_idle_bytes();

// A dense resident's device memory (a loaded dataset's counts). When its last owner lets go it is kept, the latest
// one per device, for the next resident of exactly that size instead of freed: the cudaMalloc of the sample's 19.3 GB
// right after the previous dataset's release waited 5.8-8.9 ms for the driver (H100, s21e), which held a reloaded
// file's decode back by as much. A resident of another size frees the kept one first; admission counts it as free;
// any device allocation that finds too little memory frees it (add_memory_reclaimer); QGPU_KEEP_RESIDENT=0 frees
// every released resident at once. Contents are undefined (the load writes every byte).
std::shared_ptr<DeviceBuffer> resident_buffer(std::size_t bytes);

// The kept resident of exactly `bytes` on the current device, or null (then resident_buffer allocates).
std::shared_ptr<DeviceBuffer> take_kept_resident(std::size_t bytes);

// Bytes of the kept resident on the current device (admission counts them as free), and its release.
std::size_t kept_resident_bytes();
void release_kept_resident();

}  // namespace qgpu
