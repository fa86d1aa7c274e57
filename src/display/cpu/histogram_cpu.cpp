#include "display/cpu/display_cpu.hpp"
#include "display/scaling.hpp"

namespace qgpu::display::cpu {

Range histogram(const float* data, std::size_t n, const DisplayOptions& o, std::array<std::uint64_t, 256>& counts) {
  const Range r = find_range(data, n, o);
  counts.fill(0);
  for (std::size_t i = 0; i < n; ++i)
    if (is_finite(data[i])) ++counts[static_cast<std::size_t>(color_index(scale_value(data[i], o.scale), r.lo, r.hi))];
  return r;
}

}  // namespace qgpu::display::cpu
