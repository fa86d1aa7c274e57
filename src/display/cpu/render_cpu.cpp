#include "display/cpu/display_cpu.hpp"
#include "display/scaling.hpp"

namespace qgpu::display::cpu {

Range render(const float* data, std::size_t n, const DisplayOptions& o, const Lut& lut, std::uint8_t* rgba) {
  const Range r = find_range(data, n, o);
  for (std::size_t i = 0; i < n; ++i) {
    std::uint8_t* px = rgba + 4 * i;
    const float v = data[i];
    if (!is_finite(v)) {  // NaN and +-inf: transparent black
      px[0] = px[1] = px[2] = px[3] = 0;
      continue;
    }
    const std::uint8_t* c = lut.data() + 4 * color_index(scale_value(v, o.scale), r.lo, r.hi);
    px[0] = c[0];
    px[1] = c[1];
    px[2] = c[2];
    px[3] = c[3];
  }
  return r;
}

Range render_indexed(const float* data, std::size_t n, const DisplayOptions& o, std::uint8_t* index,
                     std::size_t* transparent) {
  const Range r = find_range(data, n, o);
  std::size_t none = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const float v = data[i];
    if (!is_finite(v)) {
      index[i] = 0;
      ++none;
      continue;
    }
    index[i] = std::uint8_t(color_index(scale_value(v, o.scale), r.lo, r.hi));
  }
  *transparent = none;
  return r;
}

}  // namespace qgpu::display::cpu
