#pragma once
// Turns CUDA runtime failures into qgpu::Error with the call site named.
#include <cuda_runtime.h>

#include <string>

#include "core/error.hpp"

namespace qgpu {

inline void cuda_check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw Error(std::string("CUDA error in ") + what + ": " + cudaGetErrorString(e));
}

}  // namespace qgpu

#define QGPU_CUDA(call) ::qgpu::cuda_check((call), #call)
#define QGPU_CUDA_LAUNCHED(name) ::qgpu::cuda_check(cudaGetLastError(), name)
