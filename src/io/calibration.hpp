#pragma once
// A file's calibration: every value read or derived from its metadata, with its unit and where it came from.
//
// Keys are those the rest of the library reads from ds.metadata()["calibration"] (ssb/params.hpp, parallax, the
// viewer): energy_kev, semiangle_mrad, scan_step_angstrom, detector_mrad_per_pixel, rotation_deg,
// defocus_angstrom, ... plus what the instrument metadata states beside them (wavelength_angstrom,
// detector_pixel_size_m, camera_length_m, beam_center_row_px / _col_px, count_time_s, frame_time_s,
// scan_rotation_deg). Sources are offered in order of trust: the first offer of a key is kept, a later one that
// differs by more than 1 % is named in a warning. A value that cannot be used (not a number, not finite, <= 0
// where a size is meant) is never offered: the reader adds a warning naming it instead.
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "resident/shape.hpp"

namespace qgpu::io {

struct CalibrationValue {
  double value = 0;
  std::string unit;    // "keV", "angstrom", "mrad/px", "m", "px", "s", "deg", ...
  std::string source;  // where it was read or how it was derived, e.g. "NeXus /entry/instrument/... (300000 eV)"
};

struct Calibration {
  std::map<std::string, CalibrationValue> values;
  std::vector<std::string> warnings;  // values seen but not used, and why

  // Keeps the first value offered for a key; a later one differing by more than 1 % is named in a warning.
  // Keys, sources and warnings are kept as valid UTF-8 (invalid bytes of file names become U+FFFD), so that the
  // JSON views never throw.
  void offer(const std::string& key, double value, const std::string& unit, const std::string& source);
  void warn(const std::string& warning);
  const CalibrationValue* find(const std::string& key) const;
  nlohmann::json flat() const;    // {key: value}: what ds.metadata()["calibration"] holds
  nlohmann::json detail() const;  // {key: {value, unit, source}}
};

// `s` as valid UTF-8 (invalid bytes become U+FFFD): file names in JSON text that must never throw when dumped.
std::string json_safe(const std::string& s);

// The unit of a key of our own /entry/calibration group ("" when unknown).
std::string calibration_unit(const std::string& key);

// The calibration of a load of a file ({key: value} as ds.metadata()["calibration"] holds it): the file's values
// for pixels of the load: scan step x bin_scan; detector mrad/px, pixel size and 1/A per pixel x bin_detector; the
// disk radius / bin_detector; the beam centre moved into the detector crop and binned. Every product, SSB and
// parallax then read sizes of the pixels they work on; the file's own values stay in metadata "file_calibration".
nlohmann::json calibration_of_load(const nlohmann::json& file_calibration, const Region& detector, std::size_t bin_scan,
                                   std::size_t bin_detector);

}  // namespace qgpu::io
