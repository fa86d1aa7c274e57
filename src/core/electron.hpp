#pragma once
// Electron optics constants used by the simulated sample, SSB and the file metadata: one wavelength relation for all.
#include <cmath>

namespace qgpu {

// Relativistic electron wavelength in angstrom for an accelerating voltage in kV (CODATA 2018 constants).
inline double electron_wavelength_angstrom(double energy_kev) {
  const double h = 6.62607015e-34, m0 = 9.1093837015e-31, e = 1.602176634e-19, c = 299792458.0;
  const double v = energy_kev * 1e3;
  return h / std::sqrt(2 * m0 * e * v * (1 + e * v / (2 * m0 * c * c))) * 1e10;
}

// Its inverse: the kinetic energy in keV of an electron of wavelength `angstrom` (E = sqrt((pc)^2 + (m0 c^2)^2) -
// m0 c^2, p = h / lambda; the same constants, so electron_wavelength_angstrom(electron_energy_kev(l)) == l to
// rounding). 0.019687 A <-> 300 kV.
inline double electron_energy_kev(double angstrom) {
  const double h = 6.62607015e-34, m0 = 9.1093837015e-31, e = 1.602176634e-19, c = 299792458.0;
  const double pc = h * c / (angstrom * 1e-10), mc2 = m0 * c * c;  // joules
  return (std::sqrt(pc * pc + mc2 * mc2) - mc2) / e / 1e3;
}

// The photon relation E = h c / lambda in keV (X-ray detectors write incident_wavelength from the photon energy).
inline double photon_energy_kev(double angstrom) {
  const double h = 6.62607015e-34, e = 1.602176634e-19, c = 299792458.0;
  return h * c / (angstrom * 1e-10) / e / 1e3;
}

}  // namespace qgpu
