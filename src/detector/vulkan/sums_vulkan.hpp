#pragma once
// Virtual detectors, CoM sums and detector-shaped products of a dense vulkan dataset (weighted_sums.comp: every
// pixel; pixel_list_sums.comp: a list of pixels; pixel_sums.comp). Values only: the dispatcher
// (detector/virtual_detector.cpp) sets shape and provenance.
#include <cstdint>
#include <vector>

#include "core/image.hpp"
#include "detector/mask.hpp"
#include "detector/plan.hpp"
#include "resident/dataset.hpp"

namespace qgpu::detector::vulkan {

// For each frame f (scan order) and weight vector j: sum_p weights[j][p] x frame_f[p] modulo 2^64, at
// [f * K + j] (K = weights.size(), 1..3; each frame_pixels() values). The bits are the CPU reference's uint64 sums
// of unsigned counts and its int64 sums of signed integers. Float data: DTypeError.
std::vector<std::uint64_t> weighted_sums(const Dataset& ds, const std::vector<const std::vector<std::uint32_t>*>& weights);

// The CoM's three sums of every frame at [3 f + j]: S = sum m I, Sr = sum m r I, Sc = sum m c I over detector
// pixels (r, c), m = mask[p] (1 without a mask), as weighted_sums with dpc's com_weights. No mask: one load per
// element, no weight loads; a mask selecting at most half the pixels: only those pixels read.
std::vector<std::uint64_t> com_sums(const Dataset& ds, const std::uint8_t* mask);

// The plan's strategy (detector/plan.hpp), exact: sparse walks the listed pixels of every frame; complement
// subtracts the listed pixels' sums from the frame totals (one dense pass per dataset, cached); dense reads every
// pixel and its weight.
SumImage masked_sum(const Dataset& ds, const SumPlan& plan);
SumImage sum_pattern(const Dataset& ds);
SumImage max_pattern(const Dataset& ds);

}  // namespace qgpu::detector::vulkan
