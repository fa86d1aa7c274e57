#pragma once
// Owning device allocation (cudaMalloc) usable from plain C++ translation units.
#include <cstddef>
#include <functional>
#include <vector>

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

// A box of device memory to copy to the host: `count` blocks (e.g. frames) of `rows` rows of `width` bytes; row r of
// block b at src + b * block_pitch + r * row_pitch; packed in the host at host_offset, block by block, row by row.
struct DownloadBox {
  const void* src = nullptr;
  std::size_t width = 0, rows = 1, row_pitch = 0, count = 1, block_pitch = 0, host_offset = 0;
  std::size_t bytes() const { return width * rows * count; }
};

// Copies the boxes into `host` (pageable memory) at the link's speed: pieces of at most 4 MiB through pinned bounce
// buffers, several host threads each with its own stream and pair of buffers, so that the GPU's copies, the host's
// copies out of the bounce buffers and the first touch of fresh host memory overlap. Ordered after the work queued
// before on the legacy default stream, on the current device. Used by DeviceBuffer::download for large copies and by
// the region reads (Dataset::read_into).
void download_boxes(void* host, const std::vector<DownloadBox>& boxes);

// `bytes` of device memory at `device` into `host` (pageable) as DeviceBuffer::download copies them: one cudaMemcpy
// for small sizes, pinned bounce buffers for larger, download_boxes' threads from kParallelFrom on. Ordered after the
// work queued before on the legacy default stream.
void download_bytes(void* host, const void* device, std::size_t bytes);

// `count` elements of `element_bytes` from each device array srcs[k] into the pageable host array dsts[k], in
// ranges [i0, i1) of the same elements of every array through download_boxes' lanes (pinned bounce buffers, several
// threads); on_range(i0, i1) runs on the lane's thread as soon as that range of every array has arrived, while the
// values are in its cache (dpc::run_pipeline makes the centred DPC and field of the CoM maps as they come down).
// Ordered after the work queued before on the legacy default stream. The first exception (of a copy or of
// on_range) stops the lanes and is rethrown.
void download_in_step(const std::vector<void*>& dsts, const std::vector<const void*>& srcs, std::size_t count,
                      std::size_t element_bytes, const std::function<void(std::size_t, std::size_t)>& on_range);

// `bytes` of pageable `host` memory to `device` as DeviceBuffer::upload copies them: one cudaMemcpy below 32 MiB;
// from there through pinned bounce buffers of 4 MiB on several host threads, each with its own stream, so that the
// host's copies into the bounce buffers and the GPU's copies out of them overlap (a pageable cudaMemcpy moved the
// two 67 MB components of a 4096x4096 iDPC at about 9 GB/s). Ordered after the work queued before on the legacy
// default stream; complete on return.
void upload_bytes(void* device, const void* host, std::size_t bytes);

// Caches of device memory (the load's kept batch buffers, the buffer pool) register a reclaimer: when cudaMalloc
// finds too little memory, DeviceBuffer calls every reclaimer (each frees what its cache keeps on the current device
// and says whether it freed anything) and, when one did, tries once more. The caches' memory then never makes an
// allocation fail that would fit without them (admission counts some of it as free). A reclaimer must not allocate.
void add_memory_reclaimer(bool (*reclaim)());

}  // namespace qgpu
