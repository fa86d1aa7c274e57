#include <algorithm>
#include <cstring>
#include <mutex>
#include <utility>
#include <vector>

#include "device/cuda/cuda_check.hpp"
#include "device/cuda/device_buffer.hpp"

namespace qgpu {

namespace {

struct Reclaimers {
  std::mutex m;
  std::vector<bool (*)()> fns;
};

Reclaimers& reclaimers() {
  static Reclaimers* r = new Reclaimers;  // never destroyed (used until exit)
  return *r;
}

// Calls every reclaimer; whether any freed memory.
bool reclaim_memory() {
  std::vector<bool (*)()> fns;
  {
    std::lock_guard<std::mutex> lock(reclaimers().m);
    fns = reclaimers().fns;
  }
  bool any = false;
  for (auto* f : fns) any = f() || any;
  return any;
}

}  // namespace

void add_memory_reclaimer(bool (*reclaim)()) {
  std::lock_guard<std::mutex> lock(reclaimers().m);
  if (std::find(reclaimers().fns.begin(), reclaimers().fns.end(), reclaim) == reclaimers().fns.end())
    reclaimers().fns.push_back(reclaim);
}

DeviceBuffer::DeviceBuffer(std::size_t bytes) : bytes_(bytes) {
  if (bytes == 0) return;
  cudaError_t e = cudaMalloc(&ptr_, bytes);
  if (e == cudaErrorMemoryAllocation && reclaim_memory()) {
    cudaGetLastError();
    e = cudaMalloc(&ptr_, bytes);
  }
  if (e != cudaSuccess) {
    cudaGetLastError();
    const std::string msg = "cannot allocate " + std::to_string(bytes) + " bytes on the GPU (" + gpu_memory_report() +
                            "): " + cudaGetErrorString(e);
    if (e == cudaErrorMemoryAllocation) throw OutOfMemory(msg);
    throw DeviceError(msg);
  }
}

DeviceBuffer::~DeviceBuffer() {
  if (ptr_) cudaFree(ptr_);
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& o) noexcept
    : ptr_(std::exchange(o.ptr_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    if (ptr_) cudaFree(ptr_);
    ptr_ = std::exchange(o.ptr_, nullptr);
    bytes_ = std::exchange(o.bytes_, 0);
  }
  return *this;
}

void DeviceBuffer::upload(const void* host, std::size_t bytes, std::size_t offset) {
  if (offset + bytes > bytes_) throw Error("DeviceBuffer::upload out of range");
  QGPU_CUDA(cudaMemcpy(static_cast<char*>(ptr_) + offset, host, bytes, cudaMemcpyHostToDevice));
}

namespace {

// Pinned bounce buffers for downloads into pageable memory (std::vector results): a copy from the GPU into
// pageable memory goes through the driver's small staging at a few GB/s; into pinned memory it runs at the link's
// speed, and the host copy after it is cheap. Buffers of kBounceBytes, leased from a process-wide free list (one
// per concurrent download; never freed).
constexpr std::size_t kBounceBytes = std::size_t(4) << 20;
constexpr std::size_t kBounceFrom = std::size_t(256) << 10;  // smaller copies: plain cudaMemcpy

class Bounce {
 public:
  Bounce() {
    {
      std::lock_guard<std::mutex> lock(mutex());
      if (!free_list().empty()) {
        p_ = free_list().back();
        free_list().pop_back();
        return;
      }
    }
    QGPU_CUDA(cudaMallocHost(&p_, kBounceBytes));
  }
  ~Bounce() {
    std::lock_guard<std::mutex> lock(mutex());
    free_list().push_back(p_);
  }
  Bounce(const Bounce&) = delete;
  Bounce& operator=(const Bounce&) = delete;
  char* data() const { return static_cast<char*>(p_); }

 private:
  static std::mutex& mutex() {
    static std::mutex m;
    return m;
  }
  static std::vector<void*>& free_list() {
    static std::vector<void*> l;
    return l;
  }
  void* p_ = nullptr;
};

}  // namespace

// Two bounce buffers: while the host copies chunk i out of one, the GPU copies chunk i + 1 into the other (a result
// of a few MB, e.g. a 512x512 uint64 image, goes as two halves). Copies on the legacy default stream, like the
// cudaMemcpy before: ordered after the work that wrote the buffer.
void DeviceBuffer::download(void* host, std::size_t bytes, std::size_t offset) const {
  if (offset + bytes > bytes_) throw Error("DeviceBuffer::download out of range");
  const char* src = static_cast<const char*>(ptr_) + offset;
  if (bytes < kBounceFrom) {
    QGPU_CUDA(cudaMemcpy(host, src, bytes, cudaMemcpyDeviceToHost));
    return;
  }
  struct Events {
    cudaEvent_t e[2] = {nullptr, nullptr};
    Events() {
      for (auto& x : e) QGPU_CUDA(cudaEventCreateWithFlags(&x, cudaEventDisableTiming));
    }
    ~Events() {
      for (auto& x : e)
        if (x) cudaEventDestroy(x);
    }
  } done;
  Bounce bounce[2];
  const std::size_t chunk = std::min(kBounceBytes, (bytes + 1) / 2), chunks = (bytes + chunk - 1) / chunk;
  const auto size = [&](std::size_t i) { return std::min(chunk, bytes - i * chunk); };
  const auto issue = [&](std::size_t i) {
    QGPU_CUDA(cudaMemcpyAsync(bounce[i % 2].data(), src + i * chunk, size(i), cudaMemcpyDeviceToHost, nullptr));
    QGPU_CUDA(cudaEventRecord(done.e[i % 2], nullptr));
  };
  issue(0);
  for (std::size_t i = 0; i < chunks; ++i) {
    if (i + 1 < chunks) issue(i + 1);  // into the buffer chunk i - 1 came through (already copied out)
    QGPU_CUDA(cudaEventSynchronize(done.e[i % 2]));
    std::memcpy(static_cast<char*>(host) + i * chunk, bounce[i % 2].data(), size(i));
  }
}

}  // namespace qgpu
