#pragma once
// Owns a cuFFT plan (checks: device/cuda/cufft_check.hpp).
#include "device/cuda/cufft_check.hpp"

namespace qgpu::display::cuda {

struct CufftPlan {
  cufftHandle handle = 0;
  bool made = false;
  CufftPlan() = default;
  CufftPlan(const CufftPlan&) = delete;
  CufftPlan& operator=(const CufftPlan&) = delete;
  ~CufftPlan() {
    if (made) cufftDestroy(handle);
  }
};

}  // namespace qgpu::display::cuda
