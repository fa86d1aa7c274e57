#pragma once
// Parity tests parametrised over the GPU backends (cuda, vulkan): each instance is skipped, with the reason, where its
// backend is unusable (no CUDA GPU; no Vulkan device: CI installs mesa-vulkan-drivers, so vulkan runs on lavapipe).
#include <gtest/gtest.h>

#include <string>

#include "device/device.hpp"

namespace qgpu::test {

inline bool backend_usable(Backend b, std::string* why) {
  if (b == Backend::cuda) {
    *why = detect().reason;
    return detect().cuda_available;
  }
  if (b == Backend::vulkan) {
    *why = vulkan_report().vulkan_reason;
    return vulkan_report().vulkan_available;
  }
  return true;
}

inline std::string backend_param_name(const ::testing::TestParamInfo<Backend>& i) { return backend_name(i.param); }

}  // namespace qgpu::test

#define QGPU_GPU_BACKENDS ::testing::Values(::qgpu::Backend::cuda, ::qgpu::Backend::vulkan), ::qgpu::test::backend_param_name

#define QGPU_REQUIRE_BACKEND(b)                                                                              \
  do {                                                                                                       \
    std::string qgpu_why_;                                                                                   \
    if (!::qgpu::test::backend_usable(b, &qgpu_why_))                                                        \
      GTEST_SKIP() << ::qgpu::backend_name(b) << " test skipped: backend unusable here (" << qgpu_why_ << ")"; \
  } while (0)
