#pragma once
// Masked sums on an encoded dataset (representation "encoded"), on its backend (the encoded resident's CPU
// reference or CUDA kernels). Same integers as the dense paths: weights times counts summed modulo 2^64.
#include <cstdint>
#include <string>
#include <vector>

#include "detector/plan.hpp"
#include "resident/dataset.hpp"

namespace qgpu::detector::encoded_path {

// A uniform-weight mask (sparse or total-minus-complement plan) is summed over whichever side's streams are
// cheaper to decode: its own pixels', or the other pixels' as weight x (stored frame totals - their sum), e.g. a
// bright-field disk through the sparse dark field around it. Cost per pixel ~ min(its total count, frames): all-zero
// streams are free, sparse ones cost their nonzeros, dense ones every frame. Weighted masks: the listed pixels'
// streams (sparse), the nonzero-weight pixels' (dense). Either way the same exact integers (modulo 2^64).
// `used` (optional) receives what was done, naming the side taken when it is not the plan's.
std::vector<std::uint64_t> masked_sum(const Dataset& ds, const SumPlan& plan, std::string* used = nullptr);
// Stored at encode time: no decoding.
std::vector<std::uint64_t> sum_pattern(const Dataset& ds);
// Per-pixel maximum over frames: the pixels' streams decoded in groups (at most 512 MiB of counts each).
std::vector<std::uint64_t> max_pattern(const Dataset& ds);
std::vector<std::uint64_t> frame_totals(const Dataset& ds);

}  // namespace qgpu::detector::encoded_path
