#pragma once
// Virtual detectors and detector-shaped products of a dense vulkan dataset (weighted_sums.comp, pixel_sums.comp).
// Values only: the dispatcher (detector/virtual_detector.cpp) sets shape and provenance.
#include <cstdint>
#include <vector>

#include "core/image.hpp"
#include "detector/mask.hpp"
#include "resident/dataset.hpp"

namespace qgpu::detector::vulkan {

// For each frame f (scan order) and weight vector j: sum_p weights[j][p] x frame_f[p] modulo 2^64, at
// [f * K + j] (K = weights.size(), 1..3; each frame_pixels() values). The bits are the CPU reference's uint64 sums
// of unsigned counts and its int64 sums of signed integers. Float data: DTypeError.
std::vector<std::uint64_t> weighted_sums(const Dataset& ds, const std::vector<const std::vector<std::uint32_t>*>& weights);

// Every pixel of every frame times its weight (the reference's dense pass, exact).
SumImage masked_sum(const Dataset& ds, const Mask& mask);
SumImage sum_pattern(const Dataset& ds);
SumImage max_pattern(const Dataset& ds);

}  // namespace qgpu::detector::vulkan
