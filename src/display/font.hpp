#pragma once
// The built-in 3x5 pixel font of captions (movies) and figure labels (scale bar, colourbar): one home for both.
// Characters: 0-9 A-Z a-z (drawn upper case) space . , - + = : ( ) /.
#include <cstddef>
#include <cstdint>
#include <string>

#include "display/results.hpp"

namespace qgpu::display {

// Width in font cells of text (4 per character, less the last gap); height is 5 cells.
std::size_t text_width_cells(const std::string& text);

// InvalidArgument naming the first character the font lacks.
void check_text(const std::string& text);

// Draws text with its top-left cell at (row, col), each font cell k x k pixels, in `colour` (RGBA); pixels outside
// the image are skipped.
void draw_text(Rgba& img, std::size_t row, std::size_t col, const std::string& text, std::size_t k,
               const std::uint8_t* colour);

}  // namespace qgpu::display
