// SSB parameters: the file's calibration with a user's overrides (params.hpp); params_from_metadata (ssb.hpp).
#include "ssb/params.hpp"

#include "core/error.hpp"

namespace qgpu::ssb {

void check_overrides(const ParamOverrides& o, const ParamNamer& name_of) {
  optics::check_overrides(o, "ssb", name_of);
  if (o.weighting) {
    try {
      parse_weighting(*o.weighting);
    } catch (const InvalidArgument&) {
      throw InvalidArgument((name_of ? name_of("weighting") : std::string("ssb: weighting")) + ": unknown weighting '" +
                            *o.weighting + "', not one of auto, amplitude, phase, wiener");
    }
  }
}

SsbParams resolve_params(const nlohmann::json& md, const ParamOverrides& o, const ParamNamer& name_of) {
  check_overrides(o, name_of);
  SsbParams p;
  static_cast<optics::ProbeOptics&>(p) = optics::resolve(md, o, "ssb", optics::Missing::refuse, name_of);
  if (o.weighting) p.weighting = parse_weighting(*o.weighting);
  return p;
}

SsbParams params_from_metadata(const Dataset& ds) { return resolve_params(ds.metadata(), {}); }

SsbParams params_from_metadata(const nlohmann::json& md) { return resolve_params(md, {}); }

}  // namespace qgpu::ssb
