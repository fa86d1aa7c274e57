#include "movie/frame_ops.hpp"

#include <algorithm>
#include <cctype>
#include <vector>

#include "core/checked.hpp"
#include "core/error.hpp"

namespace qgpu::movie {

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

// Source-interval overlap of output index j with source index i, both scaled by src*dst: output j covers
// [j*src, (j+1)*src), source i covers [i*dst, (i+1)*dst).
std::uint64_t overlap(std::size_t i, std::size_t j, std::size_t src, std::size_t dst) {
  const std::uint64_t lo = std::max<std::uint64_t>(std::uint64_t(i) * dst, std::uint64_t(j) * src);
  const std::uint64_t hi = std::min<std::uint64_t>(std::uint64_t(i + 1) * dst, std::uint64_t(j + 1) * src);
  return hi > lo ? hi - lo : 0;
}

}  // namespace

std::size_t label_width_cells(const std::string& text) { return text.empty() ? 0 : text.size() * 4 - 1; }

display::Rgba resize(const display::Rgba& in, std::size_t rows, std::size_t cols, Resize how) {
  if (rows == 0 || cols == 0 || in.rows == 0 || in.cols == 0) throw InvalidArgument("resize: empty image or size");
  checked_mul(checked_mul(rows, cols, "output frame pixels"), std::size_t(4), "output frame bytes");
  display::Rgba out;
  out.rows = rows;
  out.cols = cols;
  out.provenance = in.provenance;
  out.rgba.assign(rows * cols * 4, 0);
  if (rows == in.rows && cols == in.cols) {
    out.rgba = in.rgba;
    return out;
  }
  if (how == Resize::nearest) {
    for (std::size_t r = 0; r < rows; ++r) {
      const std::size_t sr = (2 * r + 1) * in.rows / (2 * rows);
      for (std::size_t c = 0; c < cols; ++c) {
        const std::size_t sc = (2 * c + 1) * in.cols / (2 * cols);
        std::copy_n(&in.rgba[(sr * in.cols + sc) * 4], 4, &out.rgba[(r * cols + c) * 4]);
      }
    }
    return out;
  }
  // area: the source span of output j is [j*src/dst, (j+1)*src/dst).
  const std::uint64_t total = std::uint64_t(in.rows) * in.cols;  // sum of weights of one output pixel
  for (std::size_t r = 0; r < rows; ++r) {
    const std::size_t r_lo = r * in.rows / rows, r_hi = std::min(in.rows, ((r + 1) * in.rows + rows - 1) / rows);
    for (std::size_t c = 0; c < cols; ++c) {
      const std::size_t c_lo = c * in.cols / cols, c_hi = std::min(in.cols, ((c + 1) * in.cols + cols - 1) / cols);
      std::uint64_t acc[4] = {0, 0, 0, 0};
      for (std::size_t i = r_lo; i < r_hi; ++i) {
        const std::uint64_t wr = overlap(i, r, in.rows, rows);
        if (wr == 0) continue;
        for (std::size_t k = c_lo; k < c_hi; ++k) {
          const std::uint64_t w = wr * overlap(k, c, in.cols, cols);
          const std::uint8_t* p = &in.rgba[(i * in.cols + k) * 4];
          for (int ch = 0; ch < 4; ++ch) acc[ch] += w * p[ch];
        }
      }
      // the weights of one output pixel sum to in.rows * in.cols (each axis: its source extent)
      for (int ch = 0; ch < 4; ++ch)
        out.rgba[(r * cols + c) * 4 + ch] = static_cast<std::uint8_t>((2 * acc[ch] + total) / (2 * total));
    }
  }
  return out;
}

void burn_label(display::Rgba& img, const std::string& text, const display::Lut& lut) {
  if (text.empty()) return;
  for (char c : text) glyph(c);  // all characters known before drawing
  const std::size_t k = std::max<std::size_t>(1, std::min(img.rows, img.cols) / 96);
  const std::size_t box_w = (label_width_cells(text) + 2) * k, box_h = 7 * k;
  const std::uint8_t* bg = &lut[0];
  const std::uint8_t* fg = &lut[255 * 4];
  auto put = [&](std::size_t r, std::size_t c, const std::uint8_t* colour) {
    if (r < img.rows && c < img.cols) std::copy_n(colour, 4, &img.rgba[(r * img.cols + c) * 4]);
  };
  for (std::size_t r = 0; r < box_h; ++r)
    for (std::size_t c = 0; c < box_w; ++c) put(r, c, bg);
  for (std::size_t i = 0; i < text.size(); ++i) {
    const Glyph& g = glyph(text[i]);
    for (std::size_t gr = 0; gr < 5; ++gr)
      for (std::size_t gc = 0; gc < 3; ++gc) {
        if (!((g.rows[gr] >> (2 - gc)) & 1)) continue;
        for (std::size_t dr = 0; dr < k; ++dr)
          for (std::size_t dc = 0; dc < k; ++dc) put((1 + gr) * k + dr, (1 + i * 4 + gc) * k + dc, fg);
      }
  }
}

}  // namespace qgpu::movie
