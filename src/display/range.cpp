#include "display/range.hpp"

#include <cmath>
#include <string>

#include <nlohmann/json.hpp>

#include "core/error.hpp"

namespace qgpu::display {

std::size_t percentile_rank(double p, std::size_t n) {
  const double pos = p / 100.0 * static_cast<double>(n - 1);
  const auto k = static_cast<std::size_t>(std::floor(pos + 0.5));
  return k < n ? k : n - 1;
}

Range resolve_range(const DisplayOptions& o, std::size_t n, const std::function<float(std::size_t)>& kth) {
  Range r;
  r.lo = o.vmin ? *o.vmin : (n ? static_cast<double>(kth(percentile_rank(o.lower_percentile, n))) : 0.0);
  r.hi = o.vmax ? *o.vmax : (n ? static_cast<double>(kth(percentile_rank(o.upper_percentile, n))) : 0.0);
  if (r.lo > r.hi) {
    const std::string from = std::string(o.vmin ? "vmin" : "lower percentile") + " vs " +
                             (o.vmax ? "vmax" : "upper percentile");
    throw InvalidArgument("display range is empty: lo=" + nlohmann::json(r.lo).dump() +
                          " > hi=" + nlohmann::json(r.hi).dump() + " (" + from + ")");
  }
  return r;
}

}  // namespace qgpu::display
