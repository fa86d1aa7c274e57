#pragma once
// Turns cuFFT failures into qgpu::Error with the call site named.
#include <cufft.h>

#include <string>

#include "core/error.hpp"

namespace qgpu {

inline void cufft_check(cufftResult r, const char* what) {
  if (r != CUFFT_SUCCESS)
    throw Error(std::string("cuFFT error ") + std::to_string(static_cast<int>(r)) + " in " + what);
}

}  // namespace qgpu

#define QGPU_CUFFT(call) ::qgpu::cufft_check((call), #call)
