#pragma once
// The probe optics SSB and parallax share: one ProbeOptics value (beam energy, convergence semi-angle, scan step,
// detector sampling, BF disk, scan-detector rotation, aberrations) and the checks both apply to it. SSB uses every
// field; parallax fits the rotation, transpose and aberrations itself (it reads only the sign of the nominal C1).
// Filled from a file's calibration plus a user's overrides by optics/resolve.hpp.
#include <cmath>
#include <optional>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "core/electron.hpp"

namespace qgpu::optics {

// Aberration coefficients (Krivanek form, the sign convention of ssb/ssb.hpp and docs/conventions.md).
struct Aberrations {
  double C1 = 0;                  // angstrom (chi = pi lambda C1 k^2 + ...); > 0 = overfocus, C1 = -defocus (Kirkland)
  double A1 = 0, A1_angle = 0;    // 2-fold astigmatism (C12), angstrom, angle in rad
  double B2 = 0, B2_angle = 0;    // axial coma (C21), angstrom, rad
  double A2 = 0, A2_angle = 0;    // 3-fold astigmatism (C23), angstrom, rad
  double C3 = 0;                  // spherical aberration (C30), angstrom
};

struct ProbeOptics {
  double energy_kev = 0;
  double semiangle_mrad = 0;
  double scan_step_angstrom = 0;
  double detector_mrad_per_pixel = 0;  // 0: semiangle / disk radius (given or fitted)
  std::optional<std::pair<double, double>> disk_center;  // (row, col) detector pixels; default: BF disk fit
  std::optional<double> disk_radius;                     // pixels; default: semiangle / mrad_per_pixel or the fit
  double rotation_deg = 0;                               // scan vs detector axes (ssb/ssb.hpp)
  bool transpose = false;                                // swap the detector row / col axes first
  Aberrations aberrations;                               // C1 from the file's defocus_angstrom
  // Where the calibration values came from (resolve): {"energy_kev": "given (--energy)" or the file's source,
  // e.g. "ARINA sidecar 'x.h5' STEM Metadata/High Tension (300000 V)"}; recorded in the provenance.
  nlohmann::json sources = nlohmann::json::object();
};

// |C1| beyond this (angstrom, 100 um) is no STEM defocus: refused as a typo (also bounds the service's fit range).
inline constexpr double kMaxAbsC1 = 1e6;

// Relativistic electron wavelength in angstrom (core/electron.hpp: the one definition, shared with the sample).
inline double wavelength_angstrom(double energy_kev) { return electron_wavelength_angstrom(energy_kev); }

// The first problem of the optics SSB and parallax both need ("energy_kev must be finite and > 0", ...), or "".
inline std::string problem(const ProbeOptics& o) {
  if (!(std::isfinite(o.energy_kev) && o.energy_kev > 0)) return "energy_kev must be finite and > 0";
  if (!(std::isfinite(o.semiangle_mrad) && o.semiangle_mrad > 0)) return "semiangle_mrad must be finite and > 0";
  if (!(std::isfinite(o.scan_step_angstrom) && o.scan_step_angstrom > 0))
    return "scan_step_angstrom must be finite and > 0";
  if (!(std::isfinite(o.detector_mrad_per_pixel) && o.detector_mrad_per_pixel >= 0))
    return "detector_mrad_per_pixel must be finite and >= 0 (0: from the disk radius)";
  if (o.disk_radius && !(std::isfinite(*o.disk_radius) && *o.disk_radius > 0)) return "disk_radius must be finite and > 0";
  if (o.disk_center && !(std::isfinite(o.disk_center->first) && std::isfinite(o.disk_center->second)))
    return "disk_center must be finite";
  return "";
}

// The BF disk radius in detector pixels that the calibration implies (semiangle / detector sampling), when both are
// known (> 0); else nullopt (the disk fit's radius is then the one to use).
inline std::optional<double> nominal_disk_radius(double semiangle_mrad, double detector_mrad_per_pixel) {
  if (std::isfinite(semiangle_mrad) && semiangle_mrad > 0 && std::isfinite(detector_mrad_per_pixel) &&
      detector_mrad_per_pixel > 0)
    return semiangle_mrad / detector_mrad_per_pixel;
  return std::nullopt;
}

}  // namespace qgpu::optics
