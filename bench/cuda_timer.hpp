#pragma once
// Median time of a GPU call in ms (CUDA events around it, after 3 warm-up calls), shared by the CUDA benchmarks.
#include <cuda_runtime.h>

#include <vector>

#include "bench_common.hpp"
#include "device/cuda/cuda_check.hpp"

namespace qgpu::bench {

template <class F> double time_ms(F&& f, int reps = 20) {
  cudaEvent_t a, b;
  QGPU_CUDA(cudaEventCreate(&a));
  QGPU_CUDA(cudaEventCreate(&b));
  for (int i = 0; i < 3; ++i) f();
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    QGPU_CUDA(cudaEventRecord(a));
    f();
    QGPU_CUDA(cudaEventRecord(b));
    QGPU_CUDA(cudaEventSynchronize(b));
    float ms = 0;
    QGPU_CUDA(cudaEventElapsedTime(&ms, a, b));
    t.push_back(ms);
  }
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  return median(t);
}

}  // namespace qgpu::bench
