#include <sys/mman.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "device/cuda/cuda_check.hpp"
#include "core/error.hpp"
#include "core/host_bytes.hpp"
#include "core/parallel_for.hpp"
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
  upload_bytes(static_cast<char*>(ptr_) + offset, host, bytes);
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

namespace {

constexpr std::size_t kParallelFrom = std::size_t(32) << 20;  // downloads from here on: download_boxes

// A piece of a box that fits one bounce buffer: blocks [b0, b0 + nb) with rows [r0, r0 + nr) of each, bytes
// [x0, x0 + nx) of each row (a row wider than a bounce buffer goes in several pieces).
struct Piece {
  const DownloadBox* box;
  std::size_t b0, nb, r0, nr, x0, nx, host_offset;
  std::size_t bytes() const { return nx * nr * nb; }
};

std::vector<Piece> pieces_of(const std::vector<DownloadBox>& boxes) {
  std::vector<Piece> out;
  for (const DownloadBox& b : boxes) {
    if (b.bytes() == 0) continue;
    const std::size_t block = b.width * b.rows;
    if (block <= kBounceBytes) {  // whole blocks per piece
      const std::size_t per = kBounceBytes / block;
      for (std::size_t b0 = 0; b0 < b.count; b0 += per) {
        const std::size_t nb = std::min(per, b.count - b0);
        out.push_back({&b, b0, nb, 0, b.rows, 0, b.width, b.host_offset + b0 * block});
      }
    } else if (b.width <= kBounceBytes) {  // one block in several pieces of whole rows
      const std::size_t per = kBounceBytes / b.width;
      for (std::size_t b0 = 0; b0 < b.count; ++b0)
        for (std::size_t r0 = 0; r0 < b.rows; r0 += per)
          out.push_back({&b, b0, 1, r0, std::min(per, b.rows - r0), 0, b.width,
                         b.host_offset + b0 * block + r0 * b.width});
    } else {  // each row in several pieces
      for (std::size_t b0 = 0; b0 < b.count; ++b0)
        for (std::size_t r0 = 0; r0 < b.rows; ++r0)
          for (std::size_t x0 = 0; x0 < b.width; x0 += kBounceBytes)
            out.push_back({&b, b0, 1, r0, 1, x0, std::min(kBounceBytes, b.width - x0),
                           b.host_offset + b0 * block + r0 * b.width + x0});
    }
  }
  return out;
}

// The piece into `dst` (pinned, packed), queued on `s`.
void issue_piece(const Piece& p, char* dst, cudaStream_t s) {
  const DownloadBox& b = *p.box;
  const char* src = static_cast<const char*>(b.src) + p.b0 * b.block_pitch + p.r0 * b.row_pitch + p.x0;
  if (p.nx < b.width) {  // part of one row
    QGPU_CUDA(cudaMemcpyAsync(dst, src, p.nx, cudaMemcpyDeviceToHost, s));
    return;
  }
  const bool rows_packed = b.row_pitch == b.width || p.nr == 1;
  const bool blocks_packed = p.nb == 1 || b.block_pitch == b.width * p.nr;
  if (rows_packed && blocks_packed) {
    QGPU_CUDA(cudaMemcpyAsync(dst, src, p.bytes(), cudaMemcpyDeviceToHost, s));
  } else if (rows_packed) {  // each block's rows one run: the blocks as the rows of a 2D copy
    const std::size_t run = b.width * p.nr;
    QGPU_CUDA(cudaMemcpy2DAsync(dst, run, src, b.block_pitch, run, p.nb, cudaMemcpyDeviceToHost, s));
  } else if (p.nb == 1) {
    QGPU_CUDA(cudaMemcpy2DAsync(dst, b.width, src, b.row_pitch, b.width, p.nr, cudaMemcpyDeviceToHost, s));
  } else if (b.row_pitch > 0 && b.block_pitch % b.row_pitch == 0) {  // every block in one 3D copy
    cudaMemcpy3DParms m{};
    m.srcPtr = make_cudaPitchedPtr(const_cast<char*>(src), b.row_pitch, b.width, b.block_pitch / b.row_pitch);
    m.dstPtr = make_cudaPitchedPtr(dst, b.width, b.width, p.nr);
    m.extent = make_cudaExtent(b.width, p.nr, p.nb);
    m.kind = cudaMemcpyDeviceToHost;
    QGPU_CUDA(cudaMemcpy3DAsync(&m, s));
  } else {
    for (std::size_t k = 0; k < p.nb; ++k)
      QGPU_CUDA(cudaMemcpy2DAsync(dst + k * b.width * p.nr, b.width, src + k * b.block_pitch, b.row_pitch, b.width,
                                  p.nr, cudaMemcpyDeviceToHost, s));
  }
}

// Tuning knobs of download_boxes, read per call (bench_queries compares them on the H200): QGPU_READ_THREADS (copy
// threads, default the cores up to 16: on the H200 (s14b) 16 threads read the 64x64 region into fresh memory in
// 15.0 ms against 17.7 ms with 8, and populating ahead only slowed it, 49-54 ms) and QGPU_READ_POPULATE=N (N more threads fault the destination in, in
// piece order, ahead of the copies: madvise(MADV_POPULATE_WRITE), which never changes a byte; default 0).
std::size_t env_count(const char* name, std::size_t fallback, std::size_t most) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  char* end = nullptr;
  const unsigned long n = std::strtoul(v, &end, 10);
  if (*end != '\0') return fallback;
  return std::min<std::size_t>(n, most);
}

// Faults [host, host + bytes) in on `count` threads, 4 MiB at a time in address order, until done or `stop`.
// Stops quietly where the kernel lacks MADV_POPULATE_WRITE (before Linux 5.14): the copies fault the pages in then.
std::vector<std::thread> populate_ahead(char* host, std::size_t bytes, std::size_t count,
                                        std::atomic<std::size_t>& next, const std::atomic<bool>& stop) {
  std::vector<std::thread> out;
  for (std::size_t t = 0; t < count; ++t)
    out.emplace_back([=, &next, &stop] {
      constexpr std::size_t kStep = std::size_t(4) << 20;
      const auto page = std::uintptr_t(4096);
      while (!stop) {
        const std::size_t at = next.fetch_add(kStep);
        if (at >= bytes) return;
        const auto lo = reinterpret_cast<std::uintptr_t>(host + at) & ~(page - 1);
        const auto hi = reinterpret_cast<std::uintptr_t>(host + std::min(bytes, at + kStep));
        if (madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_POPULATE_WRITE) != 0 && errno == EINVAL) return;
      }
    });
  return out;
}

// What each copy thread of download_boxes / upload_bytes has: its own blocking stream (ordered after the legacy
// default stream's work), two events and two pinned bounce buffers.
struct CopyLane {
  cudaStream_t s = nullptr;
  cudaEvent_t done[2] = {nullptr, nullptr};
  std::unique_ptr<Bounce> bounce[2];  // back to the pool at the end, after the stream is synchronized
};

// Runs body(lane, stop) on `items` copy threads (at most QGPU_READ_THREADS, default the cores up to 16) on the
// current device; the first error stops the others (stop becomes true) and is rethrown here.
template <class Body> void run_copy_lanes(std::size_t items, Body&& body) {
  int device = 0;
  QGPU_CUDA(cudaGetDevice(&device));
  const std::size_t threads = std::min<std::size_t>(
      items, std::max<std::size_t>(1, env_count("QGPU_READ_THREADS",
                                                std::clamp<std::size_t>(std::thread::hardware_concurrency(), 1, 16), 64)));
  std::atomic<bool> stop{false};
  std::mutex failed_mutex;
  std::exception_ptr failed;
  parallel_for(threads, [&](std::size_t) {
    CopyLane lane;
    try {
      QGPU_CUDA(cudaSetDevice(device));
      QGPU_CUDA(cudaStreamCreate(&lane.s));
      for (auto& e : lane.done) QGPU_CUDA(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
      for (auto& b : lane.bounce) b = std::make_unique<Bounce>();
      body(lane, stop);
      QGPU_CUDA(cudaStreamSynchronize(lane.s));  // nothing left in flight (into the buffers going back to the pool)
    } catch (...) {
      if (lane.s) cudaStreamSynchronize(lane.s);
      stop = true;
      std::lock_guard<std::mutex> lock(failed_mutex);
      if (!failed) failed = std::current_exception();
    }
    for (auto& e : lane.done)
      if (e) cudaEventDestroy(e);
    if (lane.s) cudaStreamDestroy(lane.s);
  });
  if (failed) std::rethrow_exception(failed);
}

}  // namespace

void download_boxes(void* host, const std::vector<DownloadBox>& boxes) {
  const std::vector<Piece> pieces = pieces_of(boxes);
  if (pieces.empty()) return;
  std::size_t end = 0;
  for (const Piece& p : pieces) end = std::max(end, p.host_offset + p.bytes());
  advise_huge_pages(host, end);  // fresh destination memory (a new numpy array) is faulted in by the copies below
  std::atomic<std::size_t> populated{0};
  std::atomic<bool> populate_stop{false};
  std::vector<std::thread> populators =
      populate_ahead(static_cast<char*>(host), end, env_count("QGPU_READ_POPULATE", 0, 64), populated, populate_stop);
  struct Join {  // the populators end before this call returns, also on an error
    std::vector<std::thread>& t;
    std::atomic<bool>& stop;
    ~Join() {
      stop = true;
      for (auto& x : t) x.join();
    }
  } join{populators, populate_stop};
  std::atomic<std::size_t> next{0};
  run_copy_lanes(pieces.size(), [&](CopyLane& l, const std::atomic<bool>& stop) {
    const Piece* pending = nullptr;  // issued into bounce[1 - k], not yet copied out
    for (int k = 0;; k ^= 1) {
      const std::size_t i = stop ? pieces.size() : next.fetch_add(1);
      if (i < pieces.size()) {
        issue_piece(pieces[i], l.bounce[k]->data(), l.s);
        QGPU_CUDA(cudaEventRecord(l.done[k], l.s));
      }
      if (pending) {
        QGPU_CUDA(cudaEventSynchronize(l.done[1 - k]));
        std::memcpy(static_cast<char*>(host) + pending->host_offset, l.bounce[1 - k]->data(), pending->bytes());
      }
      if (i >= pieces.size()) break;
      pending = &pieces[i];
    }
  });
}

void download_in_step(const std::vector<void*>& dsts, const std::vector<const void*>& srcs, std::size_t count,
                      std::size_t element_bytes, const std::function<void(std::size_t, std::size_t)>& on_range) {
  const std::size_t arrays = srcs.size();
  if (dsts.size() != arrays || arrays == 0 || element_bytes == 0 || element_bytes * arrays > kBounceBytes)
    throw Error("download_in_step: bad arrays");
  if (count == 0) return;
  // Ranges of at most 1 MiB per array (several per lane: the copies of one overlap the host's work on another), all
  // arrays of a range in one bounce buffer.
  const std::size_t per = std::max<std::size_t>(1, std::min(kBounceBytes / arrays, std::size_t(1) << 20) / element_bytes);
  const std::size_t ranges = (count + per - 1) / per;
  std::atomic<std::size_t> next{0};
  run_copy_lanes(ranges, [&](CopyLane& l, const std::atomic<bool>& stop) {
    std::size_t pending = ranges;  // issued into bounce[1 - k], not yet copied out
    for (int k = 0;; k ^= 1) {
      const std::size_t i = stop ? ranges : next.fetch_add(1);
      if (i < ranges) {
        const std::size_t i0 = i * per, bytes = (std::min(count, i0 + per) - i0) * element_bytes;
        for (std::size_t a = 0; a < arrays; ++a)
          QGPU_CUDA(cudaMemcpyAsync(static_cast<char*>(l.bounce[k]->data()) + a * per * element_bytes,
                                    static_cast<const char*>(srcs[a]) + i0 * element_bytes, bytes,
                                    cudaMemcpyDeviceToHost, l.s));
        QGPU_CUDA(cudaEventRecord(l.done[k], l.s));
      }
      if (pending < ranges) {
        QGPU_CUDA(cudaEventSynchronize(l.done[1 - k]));
        const std::size_t i0 = pending * per, i1 = std::min(count, i0 + per), bytes = (i1 - i0) * element_bytes;
        for (std::size_t a = 0; a < arrays; ++a)
          std::memcpy(static_cast<char*>(dsts[a]) + i0 * element_bytes,
                      static_cast<const char*>(l.bounce[1 - k]->data()) + a * per * element_bytes, bytes);
        on_range(i0, i1);
      }
      if (i >= ranges) break;
      pending = i;
    }
  });
}

void upload_bytes(void* device, const void* host, std::size_t bytes) {
  if (bytes < kParallelFrom) {
    QGPU_CUDA(cudaMemcpy(device, host, bytes, cudaMemcpyHostToDevice));
    return;
  }
  const std::size_t pieces = (bytes + kBounceBytes - 1) / kBounceBytes;
  const auto size = [&](std::size_t i) { return std::min(kBounceBytes, bytes - i * kBounceBytes); };
  std::atomic<std::size_t> next{0};
  run_copy_lanes(pieces, [&](CopyLane& l, const std::atomic<bool>& stop) {
    bool used[2] = {false, false};
    for (int k = 0; !stop; k ^= 1) {
      const std::size_t i = next.fetch_add(1);
      if (i >= pieces) break;
      if (used[k]) QGPU_CUDA(cudaEventSynchronize(l.done[k]));  // its previous piece has left the buffer
      std::memcpy(l.bounce[k]->data(), static_cast<const char*>(host) + i * kBounceBytes, size(i));
      QGPU_CUDA(cudaMemcpyAsync(static_cast<char*>(device) + i * kBounceBytes, l.bounce[k]->data(), size(i),
                                cudaMemcpyHostToDevice, l.s));
      QGPU_CUDA(cudaEventRecord(l.done[k], l.s));
      used[k] = true;
    }
  });
}

// Two bounce buffers: while the host copies chunk i out of one, the GPU copies chunk i + 1 into the other (a result
// of a few MB, e.g. a 512x512 uint64 image, goes as two halves). Copies on the legacy default stream, like the
// cudaMemcpy before: ordered after the work that wrote the buffer.
void DeviceBuffer::download(void* host, std::size_t bytes, std::size_t offset) const {
  if (offset + bytes > bytes_) throw Error("DeviceBuffer::download out of range");
  download_bytes(host, static_cast<const char*>(ptr_) + offset, bytes);
}

void download_bytes(void* host, const void* device, std::size_t bytes) {
  const char* src = static_cast<const char*>(device);
  if (bytes < kBounceFrom) {
    QGPU_CUDA(cudaMemcpy(host, src, bytes, cudaMemcpyDeviceToHost));
    return;
  }
  if (bytes >= kParallelFrom) {
    DownloadBox box;
    box.src = src;
    box.width = bytes;
    box.row_pitch = bytes;
    if (bytes > kBounceBytes) {  // rows of the bounce size (the last one shorter: a second box)
      box.width = box.row_pitch = kBounceBytes;
      box.rows = bytes / kBounceBytes;
    }
    std::vector<DownloadBox> boxes{box};
    if (const std::size_t done = box.width * box.rows; done < bytes)
      boxes.push_back({src + done, bytes - done, 1, bytes - done, 1, 0, done});
    download_boxes(host, boxes);
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
