#pragma once
// Turns CUDA runtime failures into typed errors with the call site named: OutOfMemory for an allocation failure
// (bytes asked for unknown here: DeviceBuffer names them), DeviceError for any other.
#include <cuda_runtime.h>

#include <string>

#include "core/error.hpp"

namespace qgpu {

// "N bytes free of M on the GPU" (or why that is unknown).
inline std::string gpu_memory_report() {
  std::size_t free_b = 0, total_b = 0;
  if (cudaMemGetInfo(&free_b, &total_b) != cudaSuccess) {
    cudaGetLastError();
    return "free GPU memory unknown";
  }
  return std::to_string(free_b) + " bytes free of " + std::to_string(total_b) + " on the GPU";
}

inline void cuda_check(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return;
  cudaGetLastError();  // clear a non-sticky error so the next call does not report it again
  const std::string msg = std::string("CUDA error in ") + what + ": " + cudaGetErrorString(e);
  if (e == cudaErrorMemoryAllocation) throw OutOfMemory(msg + " (" + gpu_memory_report() + ")");
  throw DeviceError(msg);
}

// The calling thread's current CUDA device.
inline int current_device() {
  int device = 0;
  cuda_check(cudaGetDevice(&device), "cudaGetDevice");
  return device;
}

// Waits until the work queued on `stream` is done without spinning a CPU core: a blocking-sync event puts the
// thread to sleep (cudaStreamSynchronize spins when the process has fewer CUDA contexts than CPUs). For the
// threads that wait through most of a GPU load (the encoder's, the batch slots'): the load's read threads need
// every core. A wake-up costs some microseconds: not for waits on short queries.
inline void sleep_until_done(cudaStream_t stream) {
  cudaEvent_t e = nullptr;
  cuda_check(cudaEventCreateWithFlags(&e, cudaEventBlockingSync | cudaEventDisableTiming), "sleep_until_done");
  cudaError_t r = cudaEventRecord(e, stream);
  if (r == cudaSuccess) r = cudaEventSynchronize(e);
  cudaEventDestroy(e);
  cuda_check(r, "sleep_until_done");
}

}  // namespace qgpu

#define QGPU_CUDA(call) ::qgpu::cuda_check((call), #call)
#define QGPU_CUDA_LAUNCHED(name) ::qgpu::cuda_check(cudaGetLastError(), name)
