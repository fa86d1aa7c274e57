#include "detector/encoded/masked_sum_encoded.hpp"

#include <algorithm>

#include "core/error.hpp"
#include "core/parallel_for.hpp"
#include "resident/encoded/encoded_resident.hpp"

namespace qgpu::detector::encoded_path {

namespace {

const EncodedResident& resident(const Dataset& ds) {
  const EncodedResident* e = ds.encoded();
  if (!e) throw Error("encoded masked sum on a dense dataset");
  return *e;
}

}  // namespace

std::vector<std::uint64_t> masked_sum(const Dataset& ds, const SumPlan& plan, std::string* used) {
  const EncodedResident& e = resident(ds);
  if (used) *used = strategy_name(plan.strategy);
  switch (plan.strategy) {
    case Strategy::sparse: return e.masked_sum(plan.offsets, plan.weights);
    case Strategy::complement: {
      // Which streams are cheaper: the complement's (plus the stored totals) or the mask's own?
      const std::vector<std::uint64_t> pattern = e.sum_pattern();
      const std::uint64_t frames = e.layout().frames;
      std::vector<char> in_complement(pattern.size(), 0);
      std::uint64_t cost_complement = 0, cost_mask = 0;
      for (const std::uint32_t p : plan.offsets) {
        in_complement[p] = 1;
        cost_complement += std::min<std::uint64_t>(pattern[p], frames);
      }
      std::vector<std::uint32_t> own;
      for (std::uint32_t p = 0; p < pattern.size(); ++p)
        if (!in_complement[p]) {
          own.push_back(p);
          cost_mask += std::min<std::uint64_t>(pattern[p], frames);
        }
      if (cost_mask < cost_complement) {
        if (used) *used = "sparse (mask streams cheaper than the complement's)";
        return e.masked_sum(own, std::vector<std::uint32_t>(own.size(), plan.uniform_weight));
      }
      std::vector<std::uint64_t> out = e.frame_totals();
      const std::vector<std::uint64_t> rest = e.masked_sum(plan.offsets, plan.weights);
      for (std::size_t f = 0; f < out.size(); ++f) out[f] = std::uint64_t(plan.uniform_weight) * (out[f] - rest[f]);
      return out;
    }
    case Strategy::dense: {
      std::vector<std::uint32_t> px, w;
      for (std::size_t i = 0; i < plan.weights.size(); ++i)
        if (plan.weights[i]) {
          px.push_back(std::uint32_t(i));
          w.push_back(plan.weights[i]);
        }
      return e.masked_sum(px, w);
    }
  }
  throw Error("unknown masked-sum strategy");
}

std::vector<std::uint64_t> max_pattern(const Dataset& ds) {
  const EncodedResident& e = resident(ds);
  const std::size_t frames = e.layout().frames, frame_px = e.shape().frame_pixels();
  const std::vector<std::uint64_t> pattern = e.sum_pattern();
  std::vector<std::uint64_t> out(frame_px, 0);
  const std::size_t group = std::max<std::size_t>(
      1, (std::size_t(512) << 20) / std::max<std::size_t>(1, frames * dtype_size(e.dtype())));
  std::vector<std::uint32_t> pixels;
  auto flush = [&] {
    if (pixels.empty()) return;
    const std::vector<std::uint8_t> counts = e.pixels(pixels);
    dispatch_count_dtype(e.dtype(), [&](auto z) {
      using T = decltype(z);
      const T* c = reinterpret_cast<const T*>(counts.data());
      parallel_for(pixels.size(), [&](std::size_t j) {
        out[pixels[j]] = *std::max_element(c + j * frames, c + (j + 1) * frames);
      });
    });
    pixels.clear();
  };
  for (std::uint32_t p = 0; p < frame_px; ++p) {
    if (pattern[p] == 0) continue;  // an all-zero stream: its maximum is 0
    pixels.push_back(p);
    if (pixels.size() == group) flush();
  }
  flush();
  return out;
}

std::vector<std::uint64_t> sum_pattern(const Dataset& ds) { return resident(ds).sum_pattern(); }
std::vector<std::uint64_t> frame_totals(const Dataset& ds) { return resident(ds).frame_totals(); }

}  // namespace qgpu::detector::encoded_path
