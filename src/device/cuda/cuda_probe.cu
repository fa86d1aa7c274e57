#include <cuda_runtime.h>

#include <string>

#include "device/cuda/cuda_probe.hpp"

namespace qgpu {

CudaProbe probe_cuda() {
  CudaProbe p;
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    // The runtime says "driver version is insufficient" also when there is no driver at all (no GPU): the driver
    // version tells the two apart (0: no driver installed).
    int driver = 0, runtime = 0;
    cudaDriverGetVersion(&driver);
    cudaRuntimeGetVersion(&runtime);
    const auto version = [](int v) { return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10); };
    if (e == cudaErrorInsufficientDriver && driver == 0)
      p.reason = "no NVIDIA GPU or driver found (no CUDA driver is installed)";
    else if (e == cudaErrorInsufficientDriver)
      p.reason = "the NVIDIA driver (CUDA " + version(driver) + ") is older than this build's CUDA runtime (" +
                 version(runtime) + ") needs: update the driver";
    else if (e == cudaErrorNoDevice)
      p.reason = "no NVIDIA GPU found (the driver sees none)";
    else
      p.reason = std::string("the CUDA runtime failed (cudaGetDeviceCount: ") + cudaGetErrorString(e) + ")";
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
