#include "detector/mask.hpp"

#include <algorithm>
#include <cmath>

#include "core/checked.hpp"
#include "core/error.hpp"

namespace qgpu::detector {

std::size_t Mask::nonzero() const {
  return std::size_t(std::count_if(weights.begin(), weights.end(), [](std::uint32_t w) { return w != 0; }));
}

namespace {

void check_geometry(std::size_t rows, std::size_t cols, double cr, double cc, double inner, double outer) {
  if (rows == 0 || cols == 0) throw InvalidArgument("detector mask needs a non-empty detector");
  // rows x cols uint32 weights: checked, so that a huge shape is an error rather than a wrapped small size.
  const std::uint64_t pixels = checked_mul<InvalidArgument>(rows, cols, "detector mask rows x cols");
  if (pixels > kMaxArrayBytes / sizeof(std::uint32_t))
    throw InvalidArgument("detector mask of " + std::to_string(rows) + " x " + std::to_string(cols) +
                          " pixels is larger than any array can be");
  if (!std::isfinite(cr) || !std::isfinite(cc) || !std::isfinite(inner) || !std::isfinite(outer))
    throw InvalidArgument("detector mask centre and radii must be finite");
  if (inner < 0 || outer < 0) throw InvalidArgument("detector mask radii must be >= 0");
  if (inner > outer)
    throw InvalidArgument("annulus inner radius " + std::to_string(inner) + " exceeds outer radius " +
                          std::to_string(outer));
}

Mask ring(std::size_t rows, std::size_t cols, double cr, double cc, double inner, double outer) {
  Mask m;
  m.rows = rows;
  m.cols = cols;
  m.weights.assign(rows * cols, 0);
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c = 0; c < cols; ++c) {
      const double dr = double(r) - cr, dc = double(c) - cc, d2 = dr * dr + dc * dc;
      m.weights[r * cols + c] = (d2 >= inner * inner && d2 <= outer * outer) ? 1u : 0u;
    }
  if (m.nonzero() == 0)
    throw InvalidArgument("detector mask (centre " + std::to_string(cr) + ", " + std::to_string(cc) + ", radii " +
                          std::to_string(inner) + ".." + std::to_string(outer) + ") covers no detector pixel");
  return m;
}

}  // namespace

Mask disk(std::size_t rows, std::size_t cols, double cr, double cc, double radius) {
  check_geometry(rows, cols, cr, cc, 0, radius);
  Mask m = ring(rows, cols, cr, cc, 0, radius);
  m.description = {{"kind", "disk"}, {"center", {cr, cc}}, {"radius", radius}};
  return m;
}

Mask annulus(std::size_t rows, std::size_t cols, double cr, double cc, double inner, double outer) {
  check_geometry(rows, cols, cr, cc, inner, outer);
  Mask m = ring(rows, cols, cr, cc, inner, outer);
  m.description = {{"kind", "annulus"}, {"center", {cr, cc}}, {"inner", inner}, {"outer", outer}};
  return m;
}

Mask from_weights(std::size_t rows, std::size_t cols, std::vector<std::uint32_t> weights) {
  if (weights.size() != rows * cols)
    throw InvalidArgument("mask has " + std::to_string(weights.size()) + " weights for a " + std::to_string(rows) +
                          "x" + std::to_string(cols) + " detector");
  Mask m;
  m.rows = rows;
  m.cols = cols;
  m.weights = std::move(weights);
  if (m.nonzero() == 0) throw InvalidArgument("mask has no nonzero weight");
  const bool binary = std::all_of(m.weights.begin(), m.weights.end(), [](std::uint32_t w) { return w <= 1; });
  m.description = {{"kind", binary ? "boolean" : "integer"}, {"nonzero", m.nonzero()}};
  return m;
}

MaskParts split_signed(const SignedMask& m) {
  if (m.weights.size() != m.rows * m.cols)
    throw InvalidArgument("mask has " + std::to_string(m.weights.size()) + " weights for a " + std::to_string(m.rows) +
                          "x" + std::to_string(m.cols) + " detector");
  constexpr std::int64_t kMax = 0xFFFFFFFFll;
  MaskParts p;
  p.rows = m.rows;
  p.cols = m.cols;
  p.positive.assign(m.weights.size(), 0);
  p.negative.assign(m.weights.size(), 0);
  bool any = false;
  for (std::size_t i = 0; i < m.weights.size(); ++i) {
    const std::int64_t w = m.weights[i];
    if (w > kMax || w < -kMax)
      throw InvalidArgument("mask weight " + std::to_string(w) + " at pixel " + std::to_string(i) +
                            " is outside [-(2^32 - 1), 2^32 - 1]");
    (w >= 0 ? p.positive[i] : p.negative[i]) = std::uint32_t(w >= 0 ? w : -w);
    any = any || w != 0;
  }
  if (!any) throw InvalidArgument("mask has no nonzero weight");
  return p;
}

}  // namespace qgpu::detector
