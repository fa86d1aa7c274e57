#pragma once
// How an image is turned into colours: scale, display range and colormap.
#include <optional>
#include <string>

#include "display/scale.hpp"

namespace qgpu::display {

struct DisplayOptions {
  std::string colormap = "viridis";  // see colormap.hpp
  Scale scale = Scale::linear;
  // Display range [lo, hi] from percentiles (0..100, lower <= upper) of the scaled finite pixel values;
  // percentile p is the order statistic sorted[round_half_up(p / 100 * (n - 1))] (no interpolation).
  double lower_percentile = 0.0;
  double upper_percentile = 100.0;
  // Explicit range ends in the scaled domain; each replaces its percentile when set.
  std::optional<double> vmin, vmax;
};

// Raises InvalidArgument for non-finite or out-of-order percentiles or explicit ends, or an unknown colormap.
void validate(const DisplayOptions& o);

}  // namespace qgpu::display
