#pragma once
// CUDA tests call QGPU_REQUIRE_CUDA() first: on a machine without a usable GPU they are skipped with the reason.
#include <gtest/gtest.h>

#include "device/device.hpp"

#define QGPU_REQUIRE_CUDA()                                                                          \
  do {                                                                                               \
    if (!::qgpu::detect().cuda_available)                                                            \
      GTEST_SKIP() << "CUDA test skipped: no usable GPU on this machine (" << ::qgpu::detect().reason \
                   << ")";                                                                           \
  } while (0)
