#pragma once
// Turns cuFFT failures into qgpu::Error with the call site named, and owns a cuFFT plan.
#include <cufft.h>

#include <string>

#include "core/error.hpp"

namespace qgpu::display::cuda {

inline void cufft_check(cufftResult r, const char* what) {
  if (r != CUFFT_SUCCESS)
    throw Error(std::string("cuFFT error ") + std::to_string(static_cast<int>(r)) + " in " + what);
}

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

#define QGPU_CUFFT(call) ::qgpu::display::cuda::cufft_check((call), #call)
