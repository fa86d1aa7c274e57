#include "display/options.hpp"

#include <cmath>
#include <string>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "display/colormap.hpp"

namespace qgpu::display {

void validate(const DisplayOptions& o) {
  colormap(o.colormap);  // raises for an unknown name
  const double lp = o.lower_percentile, up = o.upper_percentile;
  if (!std::isfinite(lp) || !std::isfinite(up) || lp < 0.0 || up > 100.0 || lp > up)
    throw InvalidArgument("percentiles must satisfy 0 <= lower <= upper <= 100, got lower=" +
                          nlohmann::json(lp).dump() + " upper=" + nlohmann::json(up).dump());
  if (o.vmin && !std::isfinite(*o.vmin)) throw InvalidArgument("vmin must be finite");
  if (o.vmax && !std::isfinite(*o.vmax)) throw InvalidArgument("vmax must be finite");
  if (o.vmin && o.vmax && *o.vmin > *o.vmax)
    throw InvalidArgument("vmin (" + nlohmann::json(*o.vmin).dump() + ") is greater than vmax (" +
                          nlohmann::json(*o.vmax).dump() + ")");
}

}  // namespace qgpu::display
