#pragma once
// The probe-optics checks SSB and parallax share: energy, convergence semi-angle, scan step, detector sampling and an
// optional BF-disk radius and centre. Returns the first problem ("energy_kev must be finite and > 0", ...), or "".
#include <cmath>
#include <optional>
#include <string>
#include <utility>

namespace qgpu::ssb::detail {

inline std::string probe_optics_problem(double energy_kev, double semiangle_mrad, double scan_step_angstrom,
                                        double detector_mrad_per_pixel, const std::optional<double>& disk_radius,
                                        const std::optional<std::pair<double, double>>& disk_center) {
  if (!(std::isfinite(energy_kev) && energy_kev > 0)) return "energy_kev must be finite and > 0";
  if (!(std::isfinite(semiangle_mrad) && semiangle_mrad > 0)) return "semiangle_mrad must be finite and > 0";
  if (!(std::isfinite(scan_step_angstrom) && scan_step_angstrom > 0))
    return "scan_step_angstrom must be finite and > 0";
  if (!(std::isfinite(detector_mrad_per_pixel) && detector_mrad_per_pixel >= 0))
    return "detector_mrad_per_pixel must be finite and >= 0 (0: from the disk radius)";
  if (disk_radius && !(std::isfinite(*disk_radius) && *disk_radius > 0)) return "disk_radius must be finite and > 0";
  if (disk_center && !(std::isfinite(disk_center->first) && std::isfinite(disk_center->second)))
    return "disk_center must be finite";
  return "";
}

}  // namespace qgpu::ssb::detail
