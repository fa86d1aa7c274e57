#pragma once
// Masked sums on an encoded dataset (representation "encoded"), on its backend (the encoded resident's CPU
// reference or CUDA kernels). Same integers as the dense paths: weights times counts summed modulo 2^64.
#include <cstdint>
#include <string>
#include <vector>

#include "detector/plan.hpp"
#include "resident/dataset.hpp"

namespace qgpu::detector::encoded_path {

// sparse: the listed pixels' streams only; complement: w x (stored frame totals - sum over the complement);
// dense: the mask's nonzero pixels (zero weights add nothing, so only their streams are decoded).
// `used` (optional) receives what was done: a total-minus-complement plan is summed directly over the mask's own
// pixels when their streams are cheaper to decode (cost per pixel ~ min(its total count, frames): all-zero streams
// are free, sparse ones cost their nonzeros, dense ones every frame); the result is the same exact integer.
std::vector<std::uint64_t> masked_sum(const Dataset& ds, const SumPlan& plan, std::string* used = nullptr);
// Stored at encode time: no decoding.
std::vector<std::uint64_t> sum_pattern(const Dataset& ds);
// Per-pixel maximum over frames: the pixels' streams decoded in groups (at most 512 MiB of counts each).
std::vector<std::uint64_t> max_pattern(const Dataset& ds);
std::vector<std::uint64_t> frame_totals(const Dataset& ds);

}  // namespace qgpu::detector::encoded_path
