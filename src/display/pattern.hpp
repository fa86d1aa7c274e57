#pragma once
// Diffraction patterns for the eye: the bright-field disk holds ~1e3-1e4 times the counts of the dark-field halo
// around it, so a plain log(1 + v) shows the disk only. pattern_log measures intensity in units of the faintest
// recorded signal, eps = the smallest positive value (one count over the scan, for a mean pattern):
//   out = log(1 + max(v, 0) / eps),
// so one count in the whole scan is log 2 and the disk ~log(1e4): the halo (~1e-3 counts per pixel and frame)
// lands mid-scale. Render it with pattern_display_options (linear, 0 to the 99.9th percentile). Host arithmetic;
// the result keeps its input's provenance backend (the one dispatch rule) with the eps used in its parameters.
#include "core/image.hpp"
#include "display/options.hpp"

namespace qgpu::display {

// InvalidArgument for an empty image or one with no positive finite value.
Image<float> pattern_log(const Image<float>& pattern);

// linear scale, vmin = 0 (no signal), upper percentile 99.9 (a few hot pixels do not compress the halo).
DisplayOptions pattern_display_options(const std::string& colormap = "inferno");

}  // namespace qgpu::display
