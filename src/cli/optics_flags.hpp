#pragma once
// The probe-optics flags that `qgpu ssb` and `qgpu parallax` share (--energy, --semiangle, --step, --mrad-per-pixel,
// --center, --radius): declared once, turned into optics::Overrides once, and named once in errors.
#include <CLI/CLI.hpp>

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "optics/resolve.hpp"

namespace qgpu::cli {

struct OpticsFlags {
  std::optional<double> energy, semiangle, step, mrad_per_px, radius;
  std::vector<double> center;  // --center ROW COL, empty = the fit's

  // `radius_use`: what the BF disk radius sets in this command (shown in --help).
  void add_to(CLI::App* cmd, const std::string& radius_use) {
    cmd->add_option("--energy", energy, "beam energy, keV (> 0)")->default_str("file calibration");
    cmd->add_option("--semiangle", semiangle, "convergence semi-angle, mrad (> 0)")->default_str("file calibration");
    cmd->add_option("--step", step, "scan step, angstrom (> 0)")->default_str("file calibration");
    cmd->add_option("--mrad-per-pixel", mrad_per_px, "detector calibration (> 0)")
        ->default_str("semiangle / BF disk radius");
    cmd->add_option("--center", center, "BF disk centre ROW COL, detector pixels (replaces the fit's)")
        ->expected(2)
        ->default_str("fitted BF disk centre");
    cmd->add_option("--radius", radius,
                    "BF disk radius, detector pixels (> 0; replaces the fit's: " + radius_use +
                        " when --mrad-per-pixel is not given)")
        ->default_str("fitted BF disk radius");
  }

  void apply_to(optics::Overrides& o) const {
    o.energy_kev = energy;
    o.semiangle_mrad = semiangle;
    o.scan_step_angstrom = step;
    o.detector_mrad_per_pixel = mrad_per_px;
    if (!center.empty()) o.disk_center = std::pair<double, double>{center[0], center[1]};
    o.disk_radius = radius;
  }

  // The flag that sets an optics::Overrides field (errors name what the user typed); nullopt for other keys.
  static std::optional<std::string> flag_of(const std::string& key) {
    static const std::map<std::string, std::string> flags = {
        {"energy_kev", "--energy"},
        {"semiangle_mrad", "--semiangle"},
        {"scan_step_angstrom", "--step"},
        {"detector_mrad_per_pixel", "--mrad-per-pixel"},
        {"disk_center", "--center"},
        {"disk_radius", "--radius"}};
    const auto it = flags.find(key);
    if (it == flags.end()) return std::nullopt;
    return it->second;
  }
};

}  // namespace qgpu::cli
