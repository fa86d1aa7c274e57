#include "detector/encoded/masked_sum_encoded.hpp"

#include <algorithm>

#include "core/error.hpp"
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

std::vector<std::uint64_t> sum_pattern(const Dataset& ds) { return resident(ds).sum_pattern(); }
std::vector<std::uint64_t> frame_totals(const Dataset& ds) { return resident(ds).frame_totals(); }

}  // namespace qgpu::detector::encoded_path
