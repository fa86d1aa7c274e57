#pragma once
// Rendered images made worth keeping: enlarged (nearest neighbour), with a colourbar and, when the pixel size is
// known, a scale bar. Host integer arithmetic on the RGBA bytes (every backend gives the same picture); the text uses
// the built-in 3x5 font (display/font.hpp) scaled by max(1, min(rows, cols) / 96) of the enlarged image.
//
// Layout of figure(): the image enlarged png_scale times; with annotate,
//   - a colourbar in a white margin on the right: the map from index 255 (top) to 0 (bottom), labelled in black
//     with the data values of the display range ends (the scale undone: log -> e^s - 1) and 0 when it lies inside;
//   - a scale bar in the bottom-left corner when pixel_size is set: a white bar of a round length (1, 2 or 5 x 10^n,
//     the longest no longer than a quarter of the width) over a black box, labelled "5 NM", "8 A" (angstrom) or
//     "10 MRAD".
#include <cstddef>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "core/image.hpp"
#include "display/options.hpp"
#include "display/results.hpp"

namespace qgpu::display {

// The diverging map signed products (DPC fields) get by default, with a range symmetric about 0.
inline const char* const kDivergingColormap = "RdBu_r";

struct PixelSize {
  double value = 0;  // per image pixel, before enlarging
  std::string unit;  // "angstrom" (scan space) or "mrad" (detector space)
};

struct FigureOptions {
  std::size_t png_scale = 1;  // 1..64: each pixel becomes png_scale x png_scale
  bool annotate = false;      // colourbar; scale bar too when pixel_size is set
  std::optional<PixelSize> pixel_size;
};

// InvalidArgument for png_scale outside 1..64, or a pixel size that is not finite and positive or has another unit.
void validate(const FigureOptions& f);

// Each pixel repeated k x k times; provenance kept.
Rgba enlarge(const Rgba& img, std::size_t k);

// The enlarged, annotated picture of `rendered` (display::render's output: its provenance parameters colormap,
// scale, lo and hi give the colourbar). The provenance gains "figure": {png_scale, annotate, pixel_size, unit,
// scale_bar: {length, unit, label, pixels} or null, colorbar: bool}; output_shape follows the new size.
Rgba figure(const Rgba& rendered, const FigureOptions& f);

// o with vmin = -m, vmax = +m, m = the larger magnitude of the ends of the display range o gives for img (the same
// rule as render, on the image's backend): a signed map's 0 lands mid-map. An all-zero image gets [-1, 1].
DisplayOptions symmetric_about_zero(const Image<float>& img, DisplayOptions o);

// The longest round length (1, 2 or 5 x 10^n) of at most max_length.
double round_length(double max_length);

}  // namespace qgpu::display
