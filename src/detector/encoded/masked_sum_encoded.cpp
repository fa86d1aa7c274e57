#include "detector/encoded/masked_sum_encoded.hpp"

#include <algorithm>

#include "core/error.hpp"
#include "core/parallel_for.hpp"
#include "core/stage_timing.hpp"
#include "resident/encoded/encoded_resident.hpp"

namespace qgpu::detector::encoded_path {

namespace {

const EncodedResident& resident(const Dataset& ds) {
  const EncodedResident* e = ds.encoded();
  if (!e) throw Error("encoded masked sum on a dense dataset");
  return *e;
}

// A mask giving `weight` to the listed pixels (listed_own) or to every pixel not listed: summed over its own streams
// or, when the others' streams are cheaper to decode (EncodedResident::split_by_cost), as weight x (stored frame
// total - sum over the others). The plan proposed the listed pixels' side (only the name in `used` depends on it).
std::vector<std::uint64_t> uniform_sum(const EncodedResident& e, const std::vector<std::uint32_t>& listed,
                                       bool listed_own, std::uint32_t weight, std::string* used) {
  const EncodedResident::PixelSplit split = [&] {
    const timing::Stage stage("plan");  // which side's streams are cheaper
    return e.split_by_cost(listed, listed_own, listed_own);
  }();
  const bool own = !split.rest_cheaper();
  if (used)
    *used = own ? (listed_own ? "sparse" : "sparse (mask streams cheaper than the complement's)")
                : (listed_own ? "total-minus-complement (complement streams cheaper than the mask's)"
                              : "total-minus-complement");
  return e.uniform_sum(split, weight);
}

}  // namespace

std::vector<std::uint64_t> masked_sum(const Dataset& ds, const SumPlan& plan, std::string* used) {
  const EncodedResident& e = resident(ds);
  if (used) *used = strategy_name(plan.strategy);
  switch (plan.strategy) {
    case Strategy::sparse: {
      const bool uniform = !plan.weights.empty() &&
                           std::all_of(plan.weights.begin(), plan.weights.end(),
                                       [&](std::uint32_t w) { return w == plan.weights[0]; });
      if (!uniform) return e.masked_sum(plan.offsets, plan.weights);
      return uniform_sum(e, plan.offsets, true, plan.weights[0], used);
    }
    case Strategy::complement:
      return uniform_sum(e, plan.offsets, false, plan.uniform_weight, used);
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
  const std::vector<std::uint64_t>& pattern = e.sum_pattern();
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
