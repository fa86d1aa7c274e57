#pragma once
// Internal: the front-end pieces shared by reconstruct / preview (ssb.cpp) and fit (fit.cpp).
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "ssb/ssb.hpp"
#include "ssb/ssb_backend.hpp"

namespace qgpu::ssb::detail {

// InvalidArgument for nonsense parameters (non-positive energy, semiangle, step; negative pixel size; ...).
void validate_params(const SsbParams& p);
// Validated K set for a dataset; `resolved` receives the derived calibration for the provenance.
Plan make_plan(const Dataset& ds, const SsbParams& p, std::size_t bin, nlohmann::json& resolved);
// The engine of the dataset's backend (no fallback).
std::unique_ptr<Engine> make_engine(const Dataset& ds, const Plan& plan);
nlohmann::json aberrations_json(const Aberrations& a);
Provenance provenance_for(const Dataset& ds, const SsbParams& p, const std::string& op, nlohmann::json resolved);

}  // namespace qgpu::ssb::detail
