#pragma once
// SSB parameters from the file's calibration with a user's overrides, resolved and checked once for every front
// end: the CLI (qgpu ssb flags), the service (/ssb query parameters) and Python (ssb.* keywords). The optics part is
// optics/resolve.hpp (shared with parallax); this adds the weighting and SSB's "ssb: " names.
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "optics/resolve.hpp"
#include "ssb/ssb.hpp"

namespace qgpu::ssb {

using optics::kMaxAbsC1;

struct ParamOverrides : optics::Overrides {  // empty: the file's value (or the SsbParams default)
  std::optional<std::string> weighting;      // auto | amplitude | phase | wiener
};

// The name shown for a value; keys are the ParamOverrides field names. Empty: "ssb: " + key.
using ParamNamer = optics::Namer;

// InvalidArgument naming the first bad override (optics::check_overrides) or an unknown weighting. The CLI calls it
// before loading.
void check_overrides(const ParamOverrides& overrides, const ParamNamer& name_of = {});

// optics::resolve (Missing::refuse: energy_kev, semiangle_mrad and scan_step_angstrom are required) with the
// weighting.
SsbParams resolve_params(const nlohmann::json& metadata, const ParamOverrides& overrides,
                         const ParamNamer& name_of = {});

}  // namespace qgpu::ssb
