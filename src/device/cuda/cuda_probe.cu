#include <cuda_runtime.h>

#include "device/cuda/cuda_probe.hpp"

namespace qgpu {

CudaProbe probe_cuda() {
  CudaProbe p;
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    const bool no_driver = e == cudaErrorInsufficientDriver || e == cudaErrorNoDevice;
    p.reason = std::string(no_driver ? "no NVIDIA GPU or driver found" : "the CUDA runtime failed") +
               " (cudaGetDeviceCount: " + cudaGetErrorString(e) + ")";
    cudaGetLastError();
    return p;
  }
  p.device_count = n;
  if (n == 0) {
    p.reason = "the CUDA runtime reports no devices";
    return p;
  }
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, 0) == cudaSuccess) p.name = prop.name;
  void* ptr = nullptr;
  e = cudaMalloc(&ptr, 256);
  if (e != cudaSuccess) {
    p.reason = std::string("cannot allocate on device 0: ") + cudaGetErrorString(e);
    cudaGetLastError();
    return p;
  }
  cudaFree(ptr);
  p.usable = true;
  return p;
}

}  // namespace qgpu
