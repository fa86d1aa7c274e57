#include "display/vulkan/display_vulkan.hpp"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "device/vulkan/vk_context.hpp"
#include "device/vulkan/vkfft_plans.hpp"

namespace qgpu::vulkan::shaders {
extern const Spirv display_scale;
extern const Spirv display_render;
extern const Spirv display_histogram;
extern const Spirv fft_load;
extern const Spirv fft_view;
}  // namespace qgpu::vulkan::shaders

namespace qgpu::display::vulkan {

namespace vk = qgpu::vulkan;

namespace {

constexpr std::uint64_t kGroup = 128;  // local_size_x of the shaders

struct Push {  // the render / histogram push constants (std430: the doubles at 8 and 16)
  std::uint32_t n, scale;
  double lo, hi;
};
static_assert(sizeof(Push) == 24);

vk::Context& context_for(std::size_t n, const char* op) {
  vk::Context& c = vk::Context::get();
  if (!c.float64())
    throw BackendUnavailable(std::string(op) + " on vulkan needs shaderFloat64 (the exact double arithmetic of "
                             "the display pipeline), which this device lacks");
  if (n >= (std::size_t(1) << 32) || n * 4 > c.max_buffer_bytes())
    throw InvalidArgument(std::string(op) + ": " + std::to_string(n) + " pixels exceed one vulkan storage buffer");
  return c;
}

// The display range of the resident image `in` (n pixels): keys and the finite count on the device, the percentile
// ranks picked among the finite keys on the host as the reference does.
Range find_range(vk::Context& c, const vk::Buffer& in, std::size_t n, const DisplayOptions& o) {
  if (range_is_explicit(o)) return resolve_range(o, 0, {});
  vk::Buffer keys(n * 4), count(4);
  count.fill_zero();
  const std::uint32_t push[2] = {std::uint32_t(n), std::uint32_t(o.scale)};
  vk::Commands cmd;
  cmd.dispatch(c.pipeline(vk::shaders::display_scale, 3, 8), {{&in}, {&keys}, {&count}}, push, sizeof push,
               (n + kGroup - 1) / kGroup);
  cmd.run();
  std::uint32_t finite = 0;
  count.download(&finite, 4);
  if (finite == 0) return resolve_range(o, 0, {});
  std::vector<float> k(n);
  keys.download(k.data(), n * 4);
  // non-finite pixels have key +inf, which no finite pixel scales to: the finite keys are the `finite` smallest
  std::nth_element(k.begin(), k.begin() + std::ptrdiff_t(finite - 1), k.end());
  k.resize(finite);
  return resolve_range(o, finite, [&](std::size_t r) {
    std::nth_element(k.begin(), k.begin() + std::ptrdiff_t(r), k.end());
    return k[r];
  });
}

}  // namespace

Range render(const float* data, std::size_t n, const DisplayOptions& o, const Lut& lut, std::uint8_t* rgba) {
  vk::Context& c = context_for(n, "display.render");
  vk::Buffer in(n * 4), table(lut.size()), out(n * 4);
  in.upload(data, n * 4);
  table.upload(lut.data(), lut.size());
  const Range r = find_range(c, in, n, o);
  const Push push{std::uint32_t(n), std::uint32_t(o.scale), r.lo, r.hi};
  vk::Commands cmd;
  cmd.dispatch(c.pipeline(vk::shaders::display_render, 3, sizeof push), {{&in}, {&table}, {&out}}, &push,
               sizeof push, (n + kGroup - 1) / kGroup);
  cmd.run();
  out.download(rgba, n * 4);
  return r;
}

Range histogram(const float* data, std::size_t n, const DisplayOptions& o, std::array<std::uint64_t, 256>& counts) {
  vk::Context& c = context_for(n, "display.histogram");
  vk::Buffer in(n * 4), bins(256 * 4);
  in.upload(data, n * 4);
  bins.fill_zero();
  const Range r = find_range(c, in, n, o);
  const Push push{std::uint32_t(n), std::uint32_t(o.scale), r.lo, r.hi};
  vk::Commands cmd;
  cmd.dispatch(c.pipeline(vk::shaders::display_histogram, 2, sizeof push), {{&in}, {&bins}}, &push, sizeof push,
               (n + kGroup - 1) / kGroup);
  cmd.run();
  std::array<std::uint32_t, 256> b{};
  bins.download(b.data(), 256 * 4);
  std::copy(b.begin(), b.end(), counts.begin());
  return r;
}

std::vector<float> fft_log_magnitude(const float* data, std::size_t rows, std::size_t cols) {
  const std::size_t n = rows * cols;
  vk::Context& c = context_for(n, "display.fft_log_magnitude");
  vk::FftLease fft(rows, cols);
  vk::Buffer in(n * 4);
  in.upload(data, n * 4);
  const std::uint32_t load_push[1] = {std::uint32_t(n)};
  const std::uint32_t view_push[2] = {std::uint32_t(rows), std::uint32_t(cols)};
  vk::Commands cmd;
  cmd.dispatch(c.pipeline(vk::shaders::fft_load, 2, 4), {{&in}, {&fft.buffer()}}, load_push, sizeof load_push,
               (n + kGroup - 1) / kGroup);
  fft.forward(cmd);
  cmd.dispatch(c.pipeline(vk::shaders::fft_view, 2, 8), {{&fft.buffer()}, {&in}}, view_push, sizeof view_push,
               (n + kGroup - 1) / kGroup);
  cmd.run();
  std::vector<float> out(n);
  in.download(out.data(), n * 4);
  return out;
}

}  // namespace qgpu::display::vulkan
