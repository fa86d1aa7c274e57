#pragma once
// The one resolver of probe optics: the file's calibration with a user's overrides, checked once for every front end
// of SSB and parallax (CLI flags, service query parameters, Python keywords, the rotation's parallax fallback, the
// MPI run). ssb/params.hpp and parallax::resolve_params add their own settings on top.
//
// The file's values are those the loader puts into ds.metadata()["calibration"] (our /entry/calibration, a DECTRIS
// master's instrument metadata or ARINA sidecar: io/hdf5/instrument_metadata.hpp; their sources in
// ds.metadata()["calibration_detail"]): energy_kev, semiangle_mrad, scan_step_angstrom, detector_mrad_per_pixel,
// rotation_deg and defocus_angstrom (-> C1). ProbeOptics::sources records where each value used came from.
// Each given override replaces the file's value. Errors (InvalidArgument) name the value as the caller's users
// know it (a Namer: "--energy" for the CLI, "parameter 'defocus'" for the service, "ssb: energy" for Python).
#include <functional>
#include <optional>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "optics/probe_optics.hpp"

namespace qgpu::optics {

struct Overrides {  // empty: the file's value (or the ProbeOptics default when the file has none)
  std::optional<double> energy_kev, semiangle_mrad, scan_step_angstrom, detector_mrad_per_pixel, rotation_deg;
  std::optional<bool> transpose;
  std::optional<double> C1, A1, A1_angle, C3;  // angstrom, A1_angle rad
  std::optional<std::pair<double, double>> disk_center;
  std::optional<double> disk_radius;
};

// The name shown for a value; keys are the Overrides field names. Empty: "<who>: " + key.
using Namer = std::function<std::string(const std::string& key)>;

// InvalidArgument naming the first bad override: energy_kev, semiangle_mrad, scan_step_angstrom,
// detector_mrad_per_pixel and disk_radius must be finite and > 0; rotation_deg, A1, A1_angle, C3 and disk_center
// finite; C1 finite with |C1| <= kMaxAbsC1. `who` ("ssb", "parallax") prefixes the default names.
void check_overrides(const Overrides& overrides, const std::string& who, const Namer& name_of = {});

// What to do when neither the file nor the overrides give energy_kev, semiangle_mrad or scan_step_angstrom.
enum class Missing {
  refuse,  // InvalidArgument "<who>: energy_kev is missing: not in the file's calibration and not given (--energy)";
           // a file value that is not finite and > 0 is refused too
  leave    // left 0 (the caller fills or refuses them; the rotation's parallax fallback puts placeholders)
};

// The file's calibration (a number where present; a present non-number is an error) with the checked overrides
// applied.
ProbeOptics resolve(const nlohmann::json& metadata, const Overrides& overrides, const std::string& who,
                    Missing missing, const Namer& name_of = {});

}  // namespace qgpu::optics
