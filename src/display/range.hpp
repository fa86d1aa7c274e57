#pragma once
// The display range [lo, hi] of an image: the same rule on both backends (host code; each backend supplies
// the k-th smallest scaled finite value its own way).
#include <cstddef>
#include <functional>

#include "display/options.hpp"

namespace qgpu::display {

struct Range {
  double lo = 0.0;
  double hi = 0.0;
};

// Index into the ascending scaled finite values for percentile p: round_half_up(p / 100 * (n - 1)); n > 0.
std::size_t percentile_rank(double p, std::size_t n);

// lo = vmin or the lower percentile value, hi = vmax or the upper percentile value; with no finite pixel
// (n_finite == 0) a missing end is 0. kth(k) returns the k-th smallest scaled finite value (0-based).
// Raises InvalidArgument when the result has lo > hi (e.g. a vmin above the upper percentile value).
Range resolve_range(const DisplayOptions& o, std::size_t n_finite, const std::function<float(std::size_t)>& kth);

// True when the range needs no look at the data (both ends given explicitly).
inline bool range_is_explicit(const DisplayOptions& o) { return o.vmin.has_value() && o.vmax.has_value(); }

}  // namespace qgpu::display
