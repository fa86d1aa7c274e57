#include "display/pattern.hpp"

#include <cmath>
#include <limits>

#include "core/error.hpp"

namespace qgpu::display {

Image<float> pattern_log(const Image<float>& pattern) {
  if (pattern.rows == 0 || pattern.cols == 0 || pattern.data.size() != pattern.rows * pattern.cols)
    throw InvalidArgument("pattern_log: empty or malformed image");
  double eps = std::numeric_limits<double>::infinity();
  for (float v : pattern.data)
    if (std::isfinite(v) && v > 0) eps = std::min(eps, double(v));
  if (!std::isfinite(eps)) throw InvalidArgument("pattern_log: the pattern holds no positive value");
  Image<float> out;
  out.rows = pattern.rows;
  out.cols = pattern.cols;
  out.data.resize(pattern.data.size());
  for (std::size_t i = 0; i < out.data.size(); ++i) {
    const float v = pattern.data[i];
    out.data[i] = std::isfinite(v) ? float(std::log1p(std::max(double(v), 0.0) / eps)) : v;
  }
  out.provenance = pattern.provenance;
  out.provenance.operation = "display.pattern_log";
  out.provenance.output_dtype = "float32";
  out.provenance.parameters = {{"input_operation", pattern.provenance.operation},
                               {"formula", "log(1 + max(v, 0) / eps)"},
                               {"eps", eps},
                               {"eps_rule", "smallest positive value"}};
  return out;
}

DisplayOptions pattern_display_options(const std::string& colormap) {
  DisplayOptions o;
  o.colormap = colormap;
  o.scale = Scale::linear;
  o.vmin = 0.0;
  o.lower_percentile = 0.0;
  o.upper_percentile = 99.9;
  return o;
}

}  // namespace qgpu::display
