#pragma once
// SSB parameters from the file's calibration with a user's overrides, resolved and checked once for every front
// end: the CLI (qgpu ssb flags), the service (/ssb query parameters) and Python (ssb.* keywords).
//
// The file's values are those the loader puts into ds.metadata()["calibration"] (our /entry/calibration, a DECTRIS
// master's instrument metadata or ARINA sidecar: io/hdf5/instrument_metadata.hpp; their sources in
// ds.metadata()["calibration_detail"]): energy_kev, semiangle_mrad, scan_step_angstrom, detector_mrad_per_pixel,
// rotation_deg and defocus_angstrom (-> C1). SsbParams::sources records where each value used came from.
// Each given override replaces the file's value. Errors (InvalidArgument) name the value as the caller's users
// know it (a ParamNamer: "--energy" for the CLI, "parameter 'defocus'" for the service, "ssb: energy" for Python).
#include <functional>
#include <optional>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "ssb/ssb.hpp"

namespace qgpu::ssb {

// |C1| beyond this (angstrom, 100 um) is no STEM defocus: refused as a typo (also bounds the service's fit range).
inline constexpr double kMaxAbsC1 = 1e6;

struct ParamOverrides {  // empty: the file's value (or the SsbParams default when the file has none)
  std::optional<double> energy_kev, semiangle_mrad, scan_step_angstrom, detector_mrad_per_pixel, rotation_deg;
  std::optional<bool> transpose;
  std::optional<double> C1, A1, A1_angle, C3;  // angstrom, A1_angle rad
  std::optional<std::pair<double, double>> disk_center;
  std::optional<double> disk_radius;
  std::optional<std::string> weighting;  // auto | amplitude | phase | wiener
};

// The name shown for a value; keys are the ParamOverrides field names. Empty: "ssb: " + key.
using ParamNamer = std::function<std::string(const std::string& key)>;

// InvalidArgument naming the first bad override: energy_kev, semiangle_mrad, scan_step_angstrom,
// detector_mrad_per_pixel and disk_radius must be finite and > 0; rotation_deg, A1, A1_angle, C3 and disk_center
// finite; C1 finite with |C1| <= kMaxAbsC1; weighting one of the known names. The CLI calls it before loading.
void check_overrides(const ParamOverrides& overrides, const ParamNamer& name_of = {});

// The file's calibration (a number where present; a present non-number is an error) with the checked overrides
// applied. energy_kev, semiangle_mrad and scan_step_angstrom are required: InvalidArgument when neither the file
// nor the overrides give one, or when the file's value is not finite and > 0.
SsbParams resolve_params(const nlohmann::json& metadata, const ParamOverrides& overrides,
                         const ParamNamer& name_of = {});

}  // namespace qgpu::ssb
