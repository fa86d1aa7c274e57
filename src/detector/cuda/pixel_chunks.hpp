#pragma once
// Host side of the chunked pixel-major gather (pixel_group_gather.cuh, gather_groups_pixel_major_kernel): the
// pixels of groups [g0, g0 + count) of a CSR list split into decode chunks of at most max_pixels pixels, each
// ending at the last group boundary inside it when there is one (whole groups per chunk where they fit), else in
// the middle of a group (the kernel adds that group's parts).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/error.hpp"

namespace qgpu::detector {

struct PixelChunk {
  std::size_t a, b;    // pixels [a, b) of the flat list
  std::size_t ga, gb;  // the groups they touch: [ga, gb)
};

inline std::vector<PixelChunk> pixel_chunks(const std::vector<std::uint32_t>& offsets, std::size_t g0,
                                            std::size_t count, std::size_t max_pixels) {
  if (max_pixels == 0) throw InvalidArgument("pixel chunks of 0 pixels");
  if (offsets.empty() || g0 > offsets.size() - 1 || count > offsets.size() - 1 - g0)
    throw InvalidArgument("pixel chunks: groups " + std::to_string(g0) + " + " + std::to_string(count) +
                          " outside the " + std::to_string(offsets.empty() ? 0 : offsets.size() - 1) + " groups");
  const auto first = offsets.begin() + std::ptrdiff_t(g0), end = first + std::ptrdiff_t(count) + 1;
  const std::size_t k1 = offsets[g0 + count];
  std::vector<PixelChunk> out;
  for (std::size_t a = offsets[g0]; a < k1;) {
    std::size_t b = a + std::min(max_pixels, k1 - a);
    const std::size_t boundary = *(std::upper_bound(first, end, std::uint32_t(b)) - 1);  // the last <= b
    if (b < k1 && boundary > a) b = boundary;
    const std::size_t ga = std::size_t(std::upper_bound(first, end, std::uint32_t(a)) - offsets.begin()) - 1;
    const std::size_t gb = std::size_t(std::lower_bound(first, end, std::uint32_t(b)) - offsets.begin());
    out.push_back({a, b, ga, gb});
    a = b;
  }
  return out;
}

}  // namespace qgpu::detector
