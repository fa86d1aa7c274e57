#pragma once
// Virtual detector masks: integer weights per detector pixel (0/1 for the usual BF/DF/ADF detectors).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace qgpu::detector {

struct Mask {
  std::size_t rows = 0, cols = 0;
  std::vector<std::uint32_t> weights;  // rows * cols, row-major (detector row, col)
  nlohmann::json description = nlohmann::json::object();  // how it was made, for provenance

  std::size_t nonzero() const;
};

// Pixel (r, c) is inside when (r - center_row)^2 + (c - center_col)^2 <= radius^2 (pixel centres at integers).
Mask disk(std::size_t rows, std::size_t cols, double center_row, double center_col, double radius);
// Pixel inside when inner^2 <= d^2 <= outer^2.
Mask annulus(std::size_t rows, std::size_t cols, double center_row, double center_col, double inner, double outer);
// Wraps given weights; InvalidArgument if the size does not match or no weight is nonzero.
Mask from_weights(std::size_t rows, std::size_t cols, std::vector<std::uint32_t> weights);

// Signed integer weights in [-(2^32 - 1), 2^32 - 1] (a difference detector, a centred moment). Their virtual image
// is exact int64: sum(w+ x frame) - sum(w- x frame) of the two non-negative parts, each an exact uint64 masked sum
// on the dataset's backend (so the CUDA plans serve it too).
struct SignedMask {
  std::size_t rows = 0, cols = 0;
  std::vector<std::int64_t> weights;  // rows * cols, row-major
};
// The non-negative parts (w+ = max(w, 0), w- = max(-w, 0)); either may be all zero. InvalidArgument if the size does
// not match, a weight is out of range, or no weight is nonzero.
struct MaskParts {
  std::size_t rows = 0, cols = 0;
  std::vector<std::uint32_t> positive, negative;
};
MaskParts split_signed(const SignedMask& m);

}  // namespace qgpu::detector
