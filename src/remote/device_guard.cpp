#include "remote/device_guard.hpp"

#include <cuda_runtime_api.h>

#include <string>

#include "core/error.hpp"

namespace qgpu::remote {

int current_device() {
  int current = 0;
  if (cudaGetDevice(&current) != cudaSuccess) return 0;
  return current;
}

DeviceGuard::DeviceGuard(int device) {
  if (device < 0) return;
  int current = 0;
  if (cudaGetDevice(&current) != cudaSuccess) current = 0;
  const cudaError_t e = cudaSetDevice(device);
  if (e != cudaSuccess)
    throw BackendUnavailable("cannot select CUDA device " + std::to_string(device) + ": " + cudaGetErrorString(e));
  previous_ = current;
}

DeviceGuard::~DeviceGuard() {
  if (previous_ >= 0) cudaSetDevice(previous_);
}

}  // namespace qgpu::remote
