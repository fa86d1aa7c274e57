#pragma once
// How a masked sum is evaluated (private to the detector domain; every strategy gives the same integers).
//  sparse:     sum over the mask's nonzero pixels only.
//  complement: a uniform-weight mask covering more than half the detector: w * (frame total - sum over the
//              pixels outside the mask); frame totals are computed once per dataset and cached.
//  dense:      a non-uniform mask covering more than half the detector: weights times every pixel.
#include <cstdint>
#include <string>
#include <vector>

#include "detector/mask.hpp"

namespace qgpu::detector {

enum class Strategy { sparse, complement, dense };
std::string strategy_name(Strategy s);

struct SumPlan {
  Strategy strategy = Strategy::sparse;
  std::vector<std::uint32_t> offsets;  // pixel offsets in the frame (sparse: mask pixels; complement: the rest)
  std::vector<std::uint32_t> weights;  // weights of those pixels (complement: 1)
  std::uint32_t uniform_weight = 0;    // complement: the mask's single weight
};

SumPlan plan_masked_sum(const Mask& m);

}  // namespace qgpu::detector
