#pragma once
#include <cstdint>
#include <vector>

#include "detector/mask.hpp"
#include "resident/dataset.hpp"

namespace qgpu::detector::cpu {

// Reference: every pixel of every frame times its weight, summed in uint64. No shortcuts.
std::vector<std::uint64_t> masked_sum(const Dataset& ds, const Mask& mask);
// Reference: per-pixel sum over all frames.
std::vector<std::uint64_t> sum_pattern(const Dataset& ds);
// Per-pixel maximum over frames, on every host core (each thread owns a range of pixels).
std::vector<std::uint64_t> max_pattern(const Dataset& ds);

}  // namespace qgpu::detector::cpu
