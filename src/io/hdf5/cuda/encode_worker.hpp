#pragma once
// The encoder of an encoded CUDA load, on its own host thread and CUDA stream, so that the loader reads, copies and
// decodes batch b + 1 while batch b is encoded. The loader alternates two encoder input buffers: it decodes into
// buffer i only after wait_free(i) (the batch that last used it is encoded), records ready(i) on its decode stream
// after the batch is in the buffer, then push()es it; the encoder's stream waits for that event (no device-wide
// synchronisation) and EncodedResident::append returns once its work on that stream is done.
#include <cuda_runtime.h>

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>

#include "device/cuda/cuda_check.hpp"
#include "resident/encoded/encoded_resident.hpp"

namespace qgpu::io::detail {

class EncodeWorker {
 public:
  explicit EncodeWorker(std::shared_ptr<EncodedResident> enc) : enc_(std::move(enc)) {
    QGPU_CUDA(cudaGetDevice(&device_));
    QGPU_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
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
  // Appends `count` frames at `frames` (in buffer i) after ready(i).
  void push(int i, const void* frames, std::size_t count) {
    {
      std::lock_guard<std::mutex> l(mu_);
      busy_[i] = true;
      jobs_.push_back({i, frames, count});
    }
    cv_.notify_all();
  }
  // Waits until every pushed batch is encoded; rethrows the encoder's error, if any.
  void finish() {
    wait_free(0);
    wait_free(1);
  }

 private:
  struct Job {
    int buffer = 0;
    const void* frames = nullptr;
    std::size_t count = 0;
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
      try {
        QGPU_CUDA(cudaSetDevice(device_));
        QGPU_CUDA(cudaStreamWaitEvent(stream_, ready_[job.buffer], 0));
        enc_->append(job.frames, job.count, stream_);
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
  bool stop_ = false;
  std::exception_ptr error_;
  std::thread thread_;  // last: started after every other member is initialised
};

}  // namespace qgpu::io::detail
