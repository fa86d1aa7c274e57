#pragma once
// Masked sums on an encoded dataset (representation "encoded"), on its backend (the encoded resident's CPU
// reference or CUDA kernels). Same integers as the dense paths: weights times counts summed modulo 2^64.
#include <cstdint>
#include <vector>

#include "detector/plan.hpp"
#include "resident/dataset.hpp"

namespace qgpu::detector::encoded_path {

// sparse: the listed pixels' streams only; complement: w x (stored frame totals - sum over the complement);
// dense: the mask's nonzero pixels (zero weights add nothing, so only their streams are decoded).
std::vector<std::uint64_t> masked_sum(const Dataset& ds, const SumPlan& plan);
// Stored at encode time: no decoding.
std::vector<std::uint64_t> sum_pattern(const Dataset& ds);
std::vector<std::uint64_t> frame_totals(const Dataset& ds);

}  // namespace qgpu::detector::encoded_path
