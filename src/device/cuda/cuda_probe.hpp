#pragma once
#include <string>

namespace qgpu {

struct CudaProbe {
  bool usable = false;
  int device_count = 0;
  std::string name;
  std::string reason;
};

// Asks the CUDA runtime for devices and tries one allocation on device 0.
CudaProbe probe_cuda();

}  // namespace qgpu
