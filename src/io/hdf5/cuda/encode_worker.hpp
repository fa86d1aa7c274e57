#pragma once
// The encoder of an encoded CUDA load, on its own host thread and CUDA stream, so that the loader reads, copies and
// decodes batch b + 1 while batch b is encoded. The loader alternates two encoder input buffers: it decodes into
// buffer i only after wait_free(i) (the batch that last used it is encoded), records ready(i) on its decode stream
// after the batch is in the buffer, then push()es it; the encoder's stream waits for that event (no device-wide
// synchronisation) and EncodedResident::append returns once its work on that stream is done.
// The encoder's stream has the device's highest priority (QGPU_ENCODER_PRIORITY=high, the default): the encoder is
// the slower stage of an encoded load, so its pending blocks are scheduled before the decoder's as SMs free up and
// the decoder fills the rest (with equal priorities its short kernels, e.g. the tile offsets, queue behind a whole
// decode kernel). QGPU_ENCODER_PRIORITY=low gives the decode stream the priority instead (decode_priority()), =same
// neither (the first behaviour).
#include <cuda_runtime.h>

#include <cstdlib>
#include <cstring>
#include <vector>

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>

#include "device/cuda/cuda_check.hpp"
#include "io/hdf5/load_timing.hpp"
#include "resident/encoded/encoded_resident.hpp"

namespace qgpu::io::detail {

// QGPU_ENCODER_PRIORITY: 1 encoder stream high (default), -1 decode stream high (low), 0 same.
inline int encoder_priority_mode() {
  const char* v = std::getenv("QGPU_ENCODER_PRIORITY");
  if (!v || !*v || std::strcmp(v, "high") == 0) return 1;
  if (std::strcmp(v, "low") == 0) return -1;
  return 0;  // "same" (or anything else: no priorities)
}

// The priority of a stream that should be scheduled first (cudaStreamCreateWithPriority; numerically lowest).
inline int greatest_stream_priority() {
  int least = 0, greatest = 0;
  QGPU_CUDA(cudaDeviceGetStreamPriorityRange(&least, &greatest));
  return greatest;
}

// The decode stream's priority for an encoded load (0: the default priority).
inline int decode_priority() { return encoder_priority_mode() < 0 ? greatest_stream_priority() : 0; }

// One encoded batch as the encoder saw it (QGPU_LOAD_TIMELINE): host times (now_s) when the encoder thread took the
// job and when append returned, and events on the encoder stream after it waited for the batch and after append.
struct EncodeTrace {
  double host_start = 0, host_end = 0;
  EncodedResident::EncoderTotals before, after;  // the encoder's stage sums around this batch's append
  cudaEvent_t start = nullptr, end = nullptr;
};

class EncodeWorker {
 public:
  // trace_batches > 0: records an EncodeTrace for each of the first trace_batches jobs (traces()).
  explicit EncodeWorker(std::shared_ptr<EncodedResident> enc, std::size_t trace_batches = 0) : enc_(std::move(enc)) {
    QGPU_CUDA(cudaGetDevice(&device_));
    const int priority = encoder_priority_mode() > 0 ? greatest_stream_priority() : 0;
    QGPU_CUDA(cudaStreamCreateWithPriority(&stream_, cudaStreamNonBlocking, priority));
    traces_.resize(trace_batches);
    for (auto& t : traces_) {
      QGPU_CUDA(cudaEventCreate(&t.start));
      QGPU_CUDA(cudaEventCreate(&t.end));
    }
    for (auto& e : ready_) QGPU_CUDA(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    thread_ = std::thread([this] { run(); });
  }
  // Drops batches not started (an error elsewhere ended the load), waits for the one being encoded.
  ~EncodeWorker() {
    {
      std::lock_guard<std::mutex> l(mu_);
      stop_ = true;
      jobs_.clear();
    }
    cv_.notify_all();
    thread_.join();
    cudaStreamSynchronize(stream_);
    cudaStreamDestroy(stream_);
    for (auto& e : ready_) cudaEventDestroy(e);
    for (auto& t : traces_) {
      cudaEventDestroy(t.start);
      cudaEventDestroy(t.end);
    }
  }
  EncodeWorker(const EncodeWorker&) = delete;
  EncodeWorker& operator=(const EncodeWorker&) = delete;

  // Blocks until buffer i (0 or 1) is free; rethrows the encoder's error, if any.
  void wait_free(int i) {
    std::unique_lock<std::mutex> l(mu_);
    cv_.wait(l, [&] { return !busy_[i] || error_; });
    if (error_) std::rethrow_exception(error_);
  }
  // The event the loader records on its stream once buffer i holds the batch.
  cudaEvent_t ready(int i) const { return ready_[i]; }
  // Appends `count` frames at `frames` (in buffer i) after ready(i); live: their LiveGroups bits (or null), totals:
  // their totals (LiveGroups::totals, or null), which also stay untouched until buffer i is free again.
  void push(int i, const void* frames, std::size_t count, const std::uint32_t* live = nullptr,
            const unsigned long long* totals = nullptr) {
    {
      std::lock_guard<std::mutex> l(mu_);
      busy_[i] = true;
      jobs_.push_back({i, frames, count, pushed_++, live, totals});
    }
    cv_.notify_all();
  }
  // Waits until every pushed batch is encoded; rethrows the encoder's error, if any.
  void finish() {
    wait_free(0);
    wait_free(1);
  }
  // The traces of the first jobs (valid after finish()).
  const std::vector<EncodeTrace>& traces() const { return traces_; }

 private:
  struct Job {
    int buffer = 0;
    const void* frames = nullptr;
    std::size_t count = 0;
    std::size_t index = 0;  // jobs pushed before this one
    const std::uint32_t* live = nullptr;
    const unsigned long long* totals = nullptr;
  };
  void run() {
    for (;;) {
      Job job;
      {
        std::unique_lock<std::mutex> l(mu_);
        cv_.wait(l, [&] { return stop_ || !jobs_.empty(); });
        if (stop_) return;
        job = jobs_.front();
        jobs_.pop_front();
      }
      EncodeTrace* trace = job.index < traces_.size() ? &traces_[job.index] : nullptr;
      if (trace) trace->host_start = now_s();
      try {
        QGPU_CUDA(cudaSetDevice(device_));
        QGPU_CUDA(cudaStreamWaitEvent(stream_, ready_[job.buffer], 0));
        if (trace) {
          QGPU_CUDA(cudaEventRecord(trace->start, stream_));
          trace->before = enc_->encoder_totals();
        }
        enc_->append(job.frames, job.count, stream_, job.live, job.totals);
        if (trace) {
          trace->after = enc_->encoder_totals();
          QGPU_CUDA(cudaEventRecord(trace->end, stream_));
          trace->host_end = now_s();
        }
      } catch (...) {
        std::lock_guard<std::mutex> l(mu_);
        if (!error_) error_ = std::current_exception();
      }
      {
        std::lock_guard<std::mutex> l(mu_);
        busy_[job.buffer] = false;
      }
      cv_.notify_all();
    }
  }

  std::shared_ptr<EncodedResident> enc_;
  int device_ = 0;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t ready_[2] = {nullptr, nullptr};
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> jobs_;
  bool busy_[2] = {false, false};
  std::size_t pushed_ = 0;
  std::vector<EncodeTrace> traces_;
  bool stop_ = false;
  std::exception_ptr error_;
  std::thread thread_;  // last: started after every other member is initialised
};

}  // namespace qgpu::io::detail
