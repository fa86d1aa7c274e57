#pragma once
// Owning device allocation (cudaMalloc) usable from plain C++ translation units.
#include <cstddef>

namespace qgpu {

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& o) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;

  void* data() const { return ptr_; }
  template <class T> T* as() const { return static_cast<T*>(ptr_); }
  std::size_t bytes() const { return bytes_; }

  void upload(const void* host, std::size_t bytes, std::size_t offset = 0);
  void download(void* host, std::size_t bytes, std::size_t offset = 0) const;

 private:
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
};

// Caches of device memory (the load's kept batch buffers, the buffer pool) register a reclaimer: when cudaMalloc
// finds too little memory, DeviceBuffer calls every reclaimer (each frees what its cache keeps on the current device
// and says whether it freed anything) and, when one did, tries once more. The caches' memory then never makes an
// allocation fail that would fit without them (admission counts some of it as free). A reclaimer must not allocate.
void add_memory_reclaimer(bool (*reclaim)());

}  // namespace qgpu
