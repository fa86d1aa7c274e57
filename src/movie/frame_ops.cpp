#include "movie/frame_ops.hpp"

#include <algorithm>
#include <cctype>
#include <vector>

#include "core/checked.hpp"
#include "core/error.hpp"
#include "display/font.hpp"

namespace qgpu::movie {

namespace {

// Source-interval overlap of output index j with source index i, both scaled by src*dst: output j covers
// [j*src, (j+1)*src), source i covers [i*dst, (i+1)*dst).
std::uint64_t overlap(std::size_t i, std::size_t j, std::size_t src, std::size_t dst) {
  const std::uint64_t lo = std::max<std::uint64_t>(std::uint64_t(i) * dst, std::uint64_t(j) * src);
  const std::uint64_t hi = std::min<std::uint64_t>(std::uint64_t(i + 1) * dst, std::uint64_t(j + 1) * src);
  return hi > lo ? hi - lo : 0;
}

}  // namespace

std::size_t label_width_cells(const std::string& text) { return display::text_width_cells(text); }

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
  display::check_text(text);  // all characters known before drawing
  const std::size_t k = std::max<std::size_t>(1, std::min(img.rows, img.cols) / 96);
  const std::size_t box_w = (label_width_cells(text) + 2) * k, box_h = 7 * k;
  const std::uint8_t* bg = &lut[0];
  for (std::size_t r = 0; r < std::min(box_h, img.rows); ++r)
    for (std::size_t c = 0; c < std::min(box_w, img.cols); ++c) std::copy_n(bg, 4, &img.rgba[(r * img.cols + c) * 4]);
  display::draw_text(img, k, k, text, k, &lut[255 * 4]);
}

}  // namespace qgpu::movie
