#include "detector/vulkan/sums_vulkan.hpp"

#include <algorithm>
#include <cstring>
#include <limits>
#include <memory>
#include <mutex>

#include "core/error.hpp"
#include "device/vulkan/vk_context.hpp"
#include "device/vulkan/vk_resident.hpp"

namespace qgpu::vulkan::shaders {
extern const Spirv weighted_sums;
extern const Spirv pixel_sums;
extern const Spirv pixel_list_sums;
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

// Bytes of the frames' sums (K per frame): one storage buffer binding must hold them.
void check_sums_fit(std::size_t frames, std::size_t k) {
  if (frames > vk::Context::get().max_buffer_bytes() / (k * 8))
    throw InvalidArgument("vulkan: " + std::to_string(frames) + " frames' sums exceed one storage buffer binding");
}

// weighted_sums.comp over every segment: `mode` and K as that shader says; `weights` its weights (mode 0), `mask` the
// CoM's 0/1 mask (mode 3).
std::vector<std::uint64_t> dense_pass(const Dataset& ds, std::uint32_t mode, std::size_t k,
                                      const std::vector<std::uint32_t>& weights, const std::uint8_t* mask = nullptr) {
  const vk::Resident& r = ds.vulkan_resident();
  vk::Context& c = vk::Context::get();
  const std::size_t fp = r.shape().frame_pixels(), frames = r.shape().frames(), cols = r.shape().det_cols;
  const std::uint32_t kind = vk::element_kind(r.dtype(), "the vulkan backend");
  check_sums_fit(frames, k);
  if (mode == 0 && weights.size() != fp)
    throw Error("vulkan dense pass: " + std::to_string(weights.size()) + " weights for " + std::to_string(fp) +
                " pixels");
  // The widest loads the frame layout allows: 16-byte vectors (CoM: rows of whole vectors too), 32-bit words of
  // two 16-bit or four 8-bit elements, or single elements.
  const std::size_t esize = dtype_size(r.dtype()), per = 4 / esize, vec = 16 / esize;
  const std::uint32_t path = (fp * esize) % 16 == 0 && (mode < 2 || cols % vec == 0) ? 2
                             : per > 1 && fp % per == 0                              ? 1
                                                                                     : 0;
  std::vector<std::uint32_t> w;
  if (mode == 3 && path == 0) {
    w.assign(mask, mask + fp);
  } else if (mode == 3) {  // element bit masks in the frame's layout
    std::vector<std::uint8_t> bytes(fp * esize);
    for (std::size_t p = 0; p < fp; ++p) std::memset(bytes.data() + p * esize, mask[p] ? 0xff : 0, esize);
    w.resize(bytes.size() / 4);
    std::memcpy(w.data(), bytes.data(), bytes.size());
  } else {
    w = weights;
  }
  vk::Buffer wbuf(std::max<std::size_t>(w.size(), 1) * 4), out(std::max<std::size_t>(frames * k, 1) * 8);
  if (!w.empty()) wbuf.upload(w.data(), w.size() * 4);
  const vk::Pipeline& p = c.pipeline(vk::shaders::weighted_sums, 3, 8 * 4);
  vk::Commands cmd;
  for (const auto& s : r.segments()) {
    const std::uint32_t push[8] = {std::uint32_t(fp), std::uint32_t(s.frames), std::uint32_t(s.first_frame),
                                   kind, std::uint32_t(k), mode, std::uint32_t(cols), path};
    cmd.dispatch(p, {{s.buffer.get()}, {&wbuf}, {&out}}, push, sizeof push, s.frames);
  }
  cmd.run();
  std::vector<std::uint64_t> v(frames * k);
  out.download(v.data(), v.size() * 8);
  return v;
}

// pixel_list_sums.comp over every segment: the listed pixels with `weights` (one per pixel); K = 1, or 3 for the
// CoM's row and column moments. One weight w for every pixel (a disk, a complement): the shader adds the elements
// without weight loads and the sums are multiplied by w here (the same sums modulo 2^64).
std::vector<std::uint64_t> list_pass(const Dataset& ds, const std::vector<std::uint32_t>& pixels,
                                     const std::vector<std::uint32_t>& weights, std::size_t k) {
  const vk::Resident& r = ds.vulkan_resident();
  vk::Context& c = vk::Context::get();
  const std::size_t fp = r.shape().frame_pixels(), frames = r.shape().frames();
  const std::uint32_t kind = vk::element_kind(r.dtype(), "the vulkan backend");
  check_sums_fit(frames, k);
  if (weights.size() != pixels.size())
    throw Error("vulkan pixel list: " + std::to_string(weights.size()) + " weights for " +
                std::to_string(pixels.size()) + " pixels");
  vk::Buffer pbuf(std::max<std::size_t>(pixels.size(), 1) * 4), wbuf(std::max<std::size_t>(weights.size(), 1) * 4),
      out(std::max<std::size_t>(frames * k, 1) * 8);
  if (!pixels.empty()) pbuf.upload(pixels.data(), pixels.size() * 4);
  const std::uint32_t w0 = weights.empty() ? 1 : weights[0];
  const bool uniform = k == 1 && std::all_of(weights.begin(), weights.end(), [&](std::uint32_t w) { return w == w0; });
  // K = 3: the row and column weights are w x row, w x col (uint32 products): only w = 1 goes without loads
  const bool unit = uniform || std::all_of(weights.begin(), weights.end(), [](std::uint32_t w) { return w == 1; });
  if (!unit && !weights.empty()) wbuf.upload(weights.data(), weights.size() * 4);
  const vk::Pipeline& p = c.pipeline(vk::shaders::pixel_list_sums, 4, 8 * 4);
  constexpr std::size_t kFramesPerGroup = kGroup / 32;  // pixel_list_sums.comp: 32 threads per frame
  vk::Commands cmd;
  for (const auto& s : r.segments()) {
    const std::uint32_t push[8] = {std::uint32_t(fp),     std::uint32_t(s.frames),     std::uint32_t(s.first_frame),
                                   kind,                  std::uint32_t(pixels.size()), std::uint32_t(unit),
                                   std::uint32_t(k),      std::uint32_t(r.shape().det_cols)};
    cmd.dispatch(p, {{s.buffer.get()}, {&pbuf}, {&wbuf}, {&out}}, push, sizeof push,
                 (s.frames + kFramesPerGroup - 1) / kFramesPerGroup);
  }
  cmd.run();
  std::vector<std::uint64_t> v(frames * k);
  out.download(v.data(), v.size() * 8);
  if (uniform && w0 != 1)
    for (auto& x : v) x *= w0;
  return v;
}

// The frame totals of a vulkan dataset (total-minus-complement), computed once and kept in the dataset's cache slot
// of this type (a vulkan resident is never written after its load: live acquisition refuses the backend).
struct FrameTotals {
  std::vector<std::uint64_t> totals;
};

std::shared_ptr<const FrameTotals> frame_totals(const Dataset& ds) {
  static std::mutex mutex;  // look-up, compute and store under one lock (two requests of `qgpu serve` at once)
  const std::lock_guard<std::mutex> lock(mutex);
  if (auto c = ds.cached<FrameTotals>()) return c;
  auto kept = std::make_shared<const FrameTotals>(FrameTotals{dense_pass(ds, 1, 1, {})});
  ds.set_cached(kept);
  return kept;
}

}  // namespace

std::vector<std::uint64_t> com_sums(const Dataset& ds, const std::uint8_t* mask) {
  if (!mask) return dense_pass(ds, 2, 3, {});
  const std::size_t fp = ds.shape().frame_pixels();
  std::vector<std::uint32_t> pixels, m;
  for (std::size_t p = 0; p < fp; ++p)
    if (mask[p]) {
      pixels.push_back(std::uint32_t(p));
      m.push_back(mask[p]);
    }
  if (2 * pixels.size() <= fp) return list_pass(ds, pixels, m, 3);
  return dense_pass(ds, 3, 3, {}, mask);
}

SumImage masked_sum(const Dataset& ds, const SumPlan& plan) {
  if (plan.strategy == Strategy::dense) return as_sums(ds, dense_pass(ds, 0, 1, plan.weights));
  std::vector<std::uint64_t> v = list_pass(ds, plan.offsets, plan.weights, 1);
  if (plan.strategy == Strategy::complement) {  // w x (total - complement), modulo 2^64 as the reference's sums
    const std::shared_ptr<const FrameTotals> t = frame_totals(ds);
    for (std::size_t f = 0; f < v.size(); ++f) v[f] = std::uint64_t(plan.uniform_weight) * (t->totals[f] - v[f]);
  }
  return as_sums(ds, std::move(v));
}

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
