#include "io/calibration.hpp"

#include <algorithm>
#include <cmath>

#include "core/number_text.hpp"

namespace qgpu::io {

std::string json_safe(const std::string& s) {
  const std::string quoted = nlohmann::json(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return nlohmann::json::parse(quoted).get<std::string>();
}

void Calibration::offer(const std::string& raw_key, double value, const std::string& unit, const std::string& raw_source) {
  const std::string key = json_safe(raw_key), source = json_safe(raw_source);
  const auto it = values.find(key);
  if (it == values.end()) {
    values[key] = {value, unit, source};
    return;
  }
  const CalibrationValue& kept = it->second;
  if (std::abs(value - kept.value) > 0.01 * std::max(std::abs(value), std::abs(kept.value)))
    warnings.push_back(key + ": " + source + " gives " + number_text(value) + " " + unit + " but " + kept.source +
                       " gives " + number_text(kept.value) + " " + kept.unit + ": the latter is used");
}

void Calibration::warn(const std::string& warning) { warnings.push_back(json_safe(warning)); }

const CalibrationValue* Calibration::find(const std::string& key) const {
  const auto it = values.find(key);
  return it == values.end() ? nullptr : &it->second;
}

nlohmann::json Calibration::flat() const {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [k, v] : values) j[k] = v.value;
  return j;
}

nlohmann::json Calibration::detail() const {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [k, v] : values) j[k] = {{"value", v.value}, {"unit", v.unit}, {"source", v.source}};
  return j;
}

std::string calibration_unit(const std::string& key) {
  static const std::map<std::string, std::string> units = {
      {"energy_kev", "keV"},          {"semiangle_mrad", "mrad"},          {"scan_step_angstrom", "angstrom"},
      {"detector_mrad_per_pixel", "mrad/px"}, {"rotation_deg", "deg"},     {"defocus_angstrom", "angstrom"},
      {"wavelength_angstrom", "angstrom"},    {"disk_radius_px", "px"}};
  const auto it = units.find(key);
  return it == units.end() ? "" : it->second;
}

nlohmann::json calibration_of_load(const nlohmann::json& cal, const Region& det, std::size_t bin_scan,
                                   std::size_t bin_det) {
  nlohmann::json out = nlohmann::json::object();
  if (!cal.is_object()) return out;
  const double bs = double(bin_scan), bd = double(bin_det);
  for (const auto& [key, v] : cal.items()) {
    if (!v.is_number()) continue;
    const double x = v.get<double>();
    if (key == "scan_step_angstrom")
      out[key] = x * bs;
    else if (key == "detector_mrad_per_pixel" || key == "detector_pixel_size_m" ||
             key == "detector_inv_angstrom_per_pixel")
      out[key] = x * bd;
    else if (key == "disk_radius_px")
      out[key] = x / bd;
    else if (key == "beam_center_row_px")  // output pixel i covers input row0 + b i .. + b - 1, centred at + (b-1)/2
      out[key] = (x - double(det.row0) - (bd - 1) / 2) / bd;
    else if (key == "beam_center_col_px")
      out[key] = (x - double(det.col0) - (bd - 1) / 2) / bd;
    else
      out[key] = v;
  }
  return out;
}

}  // namespace qgpu::io
