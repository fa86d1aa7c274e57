#pragma once
// Turns cuFFT failures into DeviceError (OutOfMemory for CUFFT_ALLOC_FAILED) with the call site named.
#include <cufft.h>

#include <string>

#include "core/error.hpp"

namespace qgpu {

inline void cufft_check(cufftResult r, const char* what) {
  if (r == CUFFT_SUCCESS) return;
  const std::string msg = std::string("cuFFT error ") + std::to_string(static_cast<int>(r)) + " in " + what;
  if (r == CUFFT_ALLOC_FAILED) throw OutOfMemory(msg + " (cuFFT could not allocate its work area)");
  throw DeviceError(msg);
}

}  // namespace qgpu

#define QGPU_CUFFT(call) ::qgpu::cufft_check((call), #call)
