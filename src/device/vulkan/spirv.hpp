#pragma once
// A SPIR-V module embedded at build time (cmake/embed_spirv.cmake writes one per src/<domain>/vulkan/*.comp).
#include <cstddef>
#include <cstdint>

namespace qgpu::vulkan {

struct Spirv {
  const char* name;
  const std::uint32_t* words;
  std::size_t count;
};

}  // namespace qgpu::vulkan
