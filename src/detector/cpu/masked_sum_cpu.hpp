#pragma once
#include <cstdint>
#include <vector>

#include "core/image.hpp"
#include "detector/mask.hpp"
#include "resident/dataset.hpp"

namespace qgpu::detector::cpu {

// The host reference on a dense host dataset. Sums are sum_t of the dtype (uint64 counts, int64 signed integers,
// float64 floats); the images carry only their values (the caller sets shape and provenance).
// Every pixel of every frame times its weight. No shortcuts.
SumImage masked_sum(const Dataset& ds, const Mask& mask);
// Per-pixel sum over all frames.
SumImage sum_pattern(const Dataset& ds);
// Per-pixel maximum over frames, on every host core (each thread owns a range of pixels).
SumImage max_pattern(const Dataset& ds);

}  // namespace qgpu::detector::cpu
