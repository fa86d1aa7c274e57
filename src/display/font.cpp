#include "display/font.hpp"

#include <algorithm>
#include <cctype>

#include "core/error.hpp"

namespace qgpu::display {

namespace {

// 3x5 glyphs, one row per entry, bit 2 = left column.
struct Glyph {
  char ch;
  std::uint8_t rows[5];
};

constexpr Glyph kFont[] = {
    {'0', {7, 5, 5, 5, 7}}, {'1', {2, 6, 2, 2, 7}}, {'2', {7, 1, 7, 4, 7}}, {'3', {7, 1, 3, 1, 7}},
    {'4', {5, 5, 7, 1, 1}}, {'5', {7, 4, 7, 1, 7}}, {'6', {7, 4, 7, 5, 7}}, {'7', {7, 1, 1, 2, 2}},
    {'8', {7, 5, 7, 5, 7}}, {'9', {7, 5, 7, 1, 7}}, {'A', {2, 5, 7, 5, 5}}, {'B', {6, 5, 6, 5, 6}},
    {'C', {3, 4, 4, 4, 3}}, {'D', {6, 5, 5, 5, 6}}, {'E', {7, 4, 6, 4, 7}}, {'F', {7, 4, 6, 4, 4}},
    {'G', {3, 4, 5, 5, 3}}, {'H', {5, 5, 7, 5, 5}}, {'I', {7, 2, 2, 2, 7}}, {'J', {1, 1, 1, 5, 2}},
    {'K', {5, 5, 6, 5, 5}}, {'L', {4, 4, 4, 4, 7}}, {'M', {5, 7, 7, 5, 5}}, {'N', {6, 5, 5, 5, 5}},
    {'O', {2, 5, 5, 5, 2}}, {'P', {6, 5, 6, 4, 4}}, {'Q', {2, 5, 5, 6, 3}}, {'R', {6, 5, 6, 5, 5}},
    {'S', {3, 4, 2, 1, 6}}, {'T', {7, 2, 2, 2, 2}}, {'U', {5, 5, 5, 5, 7}}, {'V', {5, 5, 5, 5, 2}},
    {'W', {5, 5, 7, 7, 5}}, {'X', {5, 5, 2, 5, 5}}, {'Y', {5, 5, 2, 2, 2}}, {'Z', {7, 1, 2, 4, 7}},
    {' ', {0, 0, 0, 0, 0}}, {'.', {0, 0, 0, 0, 2}}, {',', {0, 0, 0, 2, 4}}, {'-', {0, 0, 7, 0, 0}},
    {'+', {0, 2, 7, 2, 0}}, {'=', {0, 7, 0, 7, 0}}, {':', {0, 2, 0, 2, 0}}, {'(', {1, 2, 2, 2, 1}},
    {')', {4, 2, 2, 2, 4}}, {'/', {1, 1, 2, 4, 4}},
};

const Glyph& glyph(char c) {
  const char u = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  for (const Glyph& g : kFont)
    if (g.ch == u) return g;
  throw InvalidArgument(std::string("label character '") + c + "' is not in the built-in font");
}

}  // namespace

std::size_t text_width_cells(const std::string& text) { return text.empty() ? 0 : text.size() * 4 - 1; }

void check_text(const std::string& text) {
  for (char c : text) glyph(c);
}

void draw_text(Rgba& img, std::size_t row, std::size_t col, const std::string& text, std::size_t k,
               const std::uint8_t* colour) {
  check_text(text);  // all characters known before drawing
  for (std::size_t i = 0; i < text.size(); ++i) {
    const Glyph& g = glyph(text[i]);
    for (std::size_t gr = 0; gr < 5; ++gr)
      for (std::size_t gc = 0; gc < 3; ++gc) {
        if (!((g.rows[gr] >> (2 - gc)) & 1)) continue;
        for (std::size_t dr = 0; dr < k; ++dr)
          for (std::size_t dc = 0; dc < k; ++dc) {
            const std::size_t r = row + gr * k + dr, c = col + (i * 4 + gc) * k + dc;
            if (r < img.rows && c < img.cols) std::copy_n(colour, 4, &img.rgba[(r * img.cols + c) * 4]);
          }
      }
  }
}

}  // namespace qgpu::display
