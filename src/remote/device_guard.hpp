#pragma once
// Makes a CUDA device current for a scope (cudaSetDevice) and restores the previous one after.
// Device -1 means "no particular device" (cpu datasets, or a single-GPU server): nothing is changed.
namespace qgpu::remote {

// The CUDA device current on this thread (cudaGetDevice); 0 when it cannot be asked.
int current_device();

class DeviceGuard {
 public:
  explicit DeviceGuard(int device);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = -1;
};

}  // namespace qgpu::remote
