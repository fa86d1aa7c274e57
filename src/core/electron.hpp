#pragma once
// Electron optics constants used by the simulated sample and by SSB: one wavelength function for both.
#include <cmath>

namespace qgpu {

// Relativistic electron wavelength in angstrom for an accelerating voltage in kV (CODATA 2018 constants).
inline double electron_wavelength_angstrom(double energy_kev) {
  const double h = 6.62607015e-34, m0 = 9.1093837015e-31, e = 1.602176634e-19, c = 299792458.0;
  const double v = energy_kev * 1e3;
  return h / std::sqrt(2 * m0 * e * v * (1 + e * v / (2 * m0 * c * c))) * 1e10;
}

}  // namespace qgpu
