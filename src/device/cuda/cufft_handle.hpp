#pragma once
// The one owner of a cuFFT plan a kernel pipeline makes for itself (SSB, parallax, display FFT): destroys it when
// made. Plans that requests repeat are leased from the pool instead (cufft_plans.hpp); checks: cufft_check.hpp.
#include <cufft.h>

namespace qgpu {

struct CufftHandle {
  cufftHandle h = 0;
  bool made = false;  // set by the maker after a successful cufftPlan*
  CufftHandle() = default;
  CufftHandle(const CufftHandle&) = delete;
  CufftHandle& operator=(const CufftHandle&) = delete;
  ~CufftHandle() {
    if (made) cufftDestroy(h);
  }
};

}  // namespace qgpu
