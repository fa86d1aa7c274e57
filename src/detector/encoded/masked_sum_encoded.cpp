#include "detector/encoded/masked_sum_encoded.hpp"

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

std::vector<std::uint64_t> masked_sum(const Dataset& ds, const SumPlan& plan) {
  const EncodedResident& e = resident(ds);
  switch (plan.strategy) {
    case Strategy::sparse: return e.masked_sum(plan.offsets, plan.weights);
    case Strategy::complement: {
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
