#include "detector/vulkan/sums_vulkan.hpp"

#include <algorithm>
#include <cstring>
#include <limits>

#include "core/error.hpp"
#include "device/vulkan/vk_context.hpp"
#include "device/vulkan/vk_resident.hpp"

namespace qgpu::vulkan::shaders {
extern const Spirv weighted_sums;
extern const Spirv pixel_sums;
}  // namespace qgpu::vulkan::shaders

namespace qgpu::detector::vulkan {

namespace vk = qgpu::vulkan;

namespace {

// 64-bit shader results (lo, hi words) as the sum type of the dataset.
SumImage as_sums(const Dataset& ds, std::vector<std::uint64_t> bits) {
  if (is_count_dtype(ds.dtype())) {
    Image<std::uint64_t> img;
    img.data = std::move(bits);
    return img;
  }
  Image<std::int64_t> img;
  img.data.resize(bits.size());
  std::memcpy(img.data.data(), bits.data(), bits.size() * 8);
  return img;
}

constexpr std::uint32_t kGroup = 128;  // local_size_x of the shaders
// Frames one pixel_sums dispatch walks (a dispatch stays short: desktop drivers end long-running ones).
constexpr std::size_t kFramesPerDispatch = 2048;

std::vector<std::uint64_t> pixel_pass(const Dataset& ds, std::uint32_t mode) {
  const vk::Resident& r = ds.vulkan_resident();
  vk::Context& c = vk::Context::get();
  const std::size_t fp = r.shape().frame_pixels();
  const std::uint32_t kind = vk::element_kind(r.dtype(), "the vulkan backend");
  vk::Buffer out(fp * 8);
  std::vector<std::uint64_t> init(fp, 0);
  if (mode == 1 && is_signed_dtype(r.dtype()))  // the maximum starts at INT32_MIN
    std::fill(init.begin(), init.end(), std::uint64_t(std::uint32_t(std::numeric_limits<std::int32_t>::min())));
  out.upload(init.data(), fp * 8);
  const vk::Pipeline& p = c.pipeline(vk::shaders::pixel_sums, 2, 5 * 4);
  vk::Commands cmd;
  for (const auto& s : r.segments())
    for (std::size_t f = 0; f < s.frames; f += kFramesPerDispatch) {
      const std::uint32_t push[5] = {std::uint32_t(fp), std::uint32_t(f),
                                     std::uint32_t(std::min(kFramesPerDispatch, s.frames - f)), kind, mode};
      cmd.dispatch(p, {{s.buffer.get()}, {&out}}, push, sizeof push, (fp + kGroup - 1) / kGroup);
    }
  cmd.run();
  std::vector<std::uint64_t> v(fp);
  out.download(v.data(), fp * 8);
  return v;
}

}  // namespace

std::vector<std::uint64_t> weighted_sums(const Dataset& ds,
                                         const std::vector<const std::vector<std::uint32_t>*>& weights) {
  const vk::Resident& r = ds.vulkan_resident();
  vk::Context& c = vk::Context::get();
  const std::size_t fp = r.shape().frame_pixels(), frames = r.shape().frames();
  const std::uint32_t kind = vk::element_kind(r.dtype(), "the vulkan backend");
  const std::size_t k = weights.size();
  if (k < 1 || k > 3) throw Error("vulkan weighted_sums: 1 to 3 weight vectors");
  std::vector<std::uint32_t> w(k * fp);
  for (std::size_t j = 0; j < k; ++j) {
    if (weights[j]->size() != fp) throw Error("vulkan weighted_sums: a weight vector is not one per pixel");
    std::copy(weights[j]->begin(), weights[j]->end(), w.begin() + j * fp);
  }
  if (frames * k * 8 > c.max_buffer_bytes())
    throw InvalidArgument("vulkan: " + std::to_string(frames) + " frames' sums exceed one storage buffer binding");
  vk::Buffer wbuf(w.size() * 4), out(frames * k * 8);
  wbuf.upload(w.data(), w.size() * 4);
  const vk::Pipeline& p = c.pipeline(vk::shaders::weighted_sums, 3, 5 * 4);
  vk::Commands cmd;
  for (const auto& s : r.segments()) {
    const std::uint32_t push[5] = {std::uint32_t(fp), std::uint32_t(s.frames), std::uint32_t(s.first_frame), kind,
                                   std::uint32_t(k)};
    cmd.dispatch(p, {{s.buffer.get()}, {&wbuf}, {&out}}, push, sizeof push, s.frames);
  }
  cmd.run();
  std::vector<std::uint64_t> v(frames * k);
  out.download(v.data(), v.size() * 8);
  return v;
}

SumImage masked_sum(const Dataset& ds, const Mask& mask) { return as_sums(ds, weighted_sums(ds, {&mask.weights})); }

SumImage sum_pattern(const Dataset& ds) { return as_sums(ds, pixel_pass(ds, 0)); }

SumImage max_pattern(const Dataset& ds) {
  std::vector<std::uint64_t> m = pixel_pass(ds, 1);
  if (is_count_dtype(ds.dtype())) {
    for (auto& v : m) v &= 0xffffffffu;
    return as_sums(ds, std::move(m));
  }
  Image<std::int64_t> img;
  img.data.resize(m.size());
  for (std::size_t i = 0; i < m.size(); ++i) img.data[i] = std::int32_t(std::uint32_t(m[i]));
  return img;
}

}  // namespace qgpu::detector::vulkan
