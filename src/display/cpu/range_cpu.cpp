#include <algorithm>
#include <vector>

#include "display/cpu/display_cpu.hpp"
#include "display/scaling.hpp"

namespace qgpu::display::cpu {

Range find_range(const float* data, std::size_t n, const DisplayOptions& o) {
  if (range_is_explicit(o)) return resolve_range(o, 0, {});
  std::vector<float> scaled;
  scaled.reserve(n);
  for (std::size_t i = 0; i < n; ++i)
    if (is_finite(data[i])) scaled.push_back(scale_value(data[i], o.scale));
  // nth_element leaves the k-th smallest at position k; calling it twice is fine (the second call only
  // reorders, the multiset is unchanged).
  return resolve_range(o, scaled.size(), [&](std::size_t k) {
    std::nth_element(scaled.begin(), scaled.begin() + static_cast<std::ptrdiff_t>(k), scaled.end());
    return scaled[k];
  });
}

}  // namespace qgpu::display::cpu
