#pragma once
// Host operations on rendered RGBA frames (pure integer arithmetic, so every backend gives the same bytes).
#include <array>
#include <cstdint>
#include <string>

#include "display/colormap.hpp"
#include "display/results.hpp"
#include "movie/movie.hpp"

namespace qgpu::movie {

// Resizes to rows x cols. nearest: source index floor((2 i + 1) * src / (2 dst)) (the source pixel under the
// output pixel's centre). area: each output pixel is the overlap-weighted mean of the source pixels under its box
// (weights = exact overlap lengths in units of 1/(src*dst)), rounded half up, per channel.
display::Rgba resize(const display::Rgba& in, std::size_t rows, std::size_t cols, Resize how);

// Burns `text` into the top-left corner with the built-in 3x5 pixel font (display/font.hpp), scaled by max(1, min(rows, cols) / 96):
// glyphs in the colormap's last colour on a box of its first colour (both colours of the map, so a GIF palette
// made of the map's 256 colours stays exact). Characters: 0-9 A-Z a-z (drawn upper case) space . , - + = : ( ) /.
void burn_label(display::Rgba& img, const std::string& text, const display::Lut& lut);

// Width in font cells of text (4 per character, less the last gap), for tests.
std::size_t label_width_cells(const std::string& text);

}  // namespace qgpu::movie
