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

// The CoM's three sums of every frame at [3 f + j]: S = sum m I, Sr = sum m r I, Sc = sum m c I over detector
// pixels (r, c), m = mask[p] (1 without a mask; dpc's com_weights), modulo 2^64: the CPU reference's uint64 sums
// (signed data: the same bits as its int64 sums). No mask: one load per element (or per 16 bytes), no weight
// loads; a mask selecting at most half the pixels: only those pixels read. Float data: DTypeError.
std::vector<std::uint64_t> com_sums(const Dataset& ds, const std::uint8_t* mask);

// The plan's strategy (detector/plan.hpp), exact: sparse walks the listed pixels of every frame; complement
// subtracts the listed pixels' sums from the frame totals (one dense pass per dataset, cached); dense reads every
// pixel and its weight.
SumImage masked_sum(const Dataset& ds, const SumPlan& plan);
SumImage sum_pattern(const Dataset& ds);
SumImage max_pattern(const Dataset& ds);

}  // namespace qgpu::detector::vulkan
