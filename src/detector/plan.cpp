#include "detector/plan.hpp"

namespace qgpu::detector {

std::string strategy_name(Strategy s) {
  switch (s) {
    case Strategy::sparse: return "sparse";
    case Strategy::complement: return "total-minus-complement";
    case Strategy::dense: return "dense";
  }
  return "?";
}

SumPlan plan_masked_sum(const Mask& m) {
  SumPlan p;
  const std::size_t n = m.weights.size(), nz = m.nonzero();
  std::uint32_t w0 = 0;
  bool uniform = true;
  for (std::uint32_t w : m.weights)
    if (w) {
      if (!w0) w0 = w;
      uniform = uniform && w == w0;
    }
  if (2 * nz <= n) {
    p.strategy = Strategy::sparse;
    for (std::size_t i = 0; i < n; ++i)
      if (m.weights[i]) {
        p.offsets.push_back(std::uint32_t(i));
        p.weights.push_back(m.weights[i]);
      }
  } else if (uniform) {
    p.strategy = Strategy::complement;
    p.uniform_weight = w0;
    for (std::size_t i = 0; i < n; ++i)
      if (!m.weights[i]) {
        p.offsets.push_back(std::uint32_t(i));
        p.weights.push_back(1);
      }
  } else {
    p.strategy = Strategy::dense;
    p.weights = m.weights;
  }
  return p;
}

}  // namespace qgpu::detector
