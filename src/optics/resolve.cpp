// The probe optics from the file's calibration and a user's overrides (resolve.hpp).
#include "optics/resolve.hpp"

#include <cmath>

#include "core/error.hpp"
#include "core/number_text.hpp"

namespace qgpu::optics {

namespace {

std::string name(const Namer& name_of, const std::string& who, const std::string& key) {
  return name_of ? name_of(key) : who + ": " + key;
}

void positive(const std::string& what, double v) {
  if (!std::isfinite(v) || v <= 0) throw InvalidArgument(what + " must be a finite number > 0, got " + number_text(v));
}

void finite(const std::string& what, double v) {
  if (!std::isfinite(v)) throw InvalidArgument(what + " must be a finite number, got " + number_text(v));
}

// The file's value of `key`, when the calibration has it.
std::optional<double> file_value(const nlohmann::json& cal, const std::string& who, const char* key) {
  if (!cal.contains(key)) return std::nullopt;
  if (!cal.at(key).is_number())
    throw InvalidArgument(who + ": the file's calibration/" + key + " is not a number");
  return cal.at(key).get<double>();
}

}  // namespace

void check_overrides(const Overrides& o, const std::string& who, const Namer& name_of) {
  const auto n = [&](const char* key) { return name(name_of, who, key); };
  if (o.energy_kev) positive(n("energy_kev"), *o.energy_kev);
  if (o.semiangle_mrad) positive(n("semiangle_mrad"), *o.semiangle_mrad);
  if (o.scan_step_angstrom) positive(n("scan_step_angstrom"), *o.scan_step_angstrom);
  if (o.detector_mrad_per_pixel) positive(n("detector_mrad_per_pixel"), *o.detector_mrad_per_pixel);
  if (o.disk_radius) positive(n("disk_radius"), *o.disk_radius);
  if (o.rotation_deg) finite(n("rotation_deg"), *o.rotation_deg);
  if (o.C1) {
    finite(n("C1"), *o.C1);
    if (std::abs(*o.C1) > kMaxAbsC1)
      throw InvalidArgument(n("C1") + " must be within +-" + number_text(kMaxAbsC1) + " angstrom, got " +
                            number_text(*o.C1));
  }
  if (o.A1) finite(n("A1"), *o.A1);
  if (o.A1_angle) finite(n("A1_angle"), *o.A1_angle);
  if (o.C3) finite(n("C3"), *o.C3);
  if (o.disk_center) {
    finite(n("disk_center"), o.disk_center->first);
    finite(n("disk_center"), o.disk_center->second);
  }
}

ProbeOptics resolve(const nlohmann::json& md, const Overrides& o, const std::string& who, Missing missing,
                    const Namer& name_of) {
  check_overrides(o, who, name_of);
  ProbeOptics p;
  static const nlohmann::json none = nlohmann::json::object();
  const nlohmann::json& cal =
      md.is_object() && md.contains("calibration") && md.at("calibration").is_object() ? md.at("calibration") : none;
  const nlohmann::json& detail =
      md.is_object() && md.contains("calibration_detail") && md.at("calibration_detail").is_object()
          ? md.at("calibration_detail")
          : none;
  // Where each value came from, for the provenance: the user's name for it, or the file's source.
  const auto from_user = [&](const char* key, const char* field) {
    p.sources[field] = "given (" + name(name_of, who, key) + ")";
  };
  const auto from_file = [&](const char* key, const char* field) {
    const bool known = detail.contains(key) && detail.at(key).is_object() && detail.at(key).contains("source") &&
                       detail.at(key).at("source").is_string();
    p.sources[field] = known ? detail.at(key).at("source").get<std::string>() : "file calibration/" + std::string(key);
  };
  // the three the reconstruction cannot do without: given, or the file's (then checked as such)
  const auto required = [&](const char* key, const std::optional<double>& given, double& dst) {
    if (given) {
      dst = *given;
      from_user(key, key);
      return;
    }
    const std::optional<double> v = file_value(cal, who, key);
    if (!v) {
      if (missing == Missing::leave) return;
      throw InvalidArgument(who + ": " + std::string(key) + " is missing: not in the file's calibration and not given" +
                            (name_of ? " (" + name_of(key) + ")" : std::string()));
    }
    if (missing == Missing::refuse) positive(who + ": the file's calibration/" + key, *v);
    dst = *v;
    from_file(key, key);
  };
  required("energy_kev", o.energy_kev, p.energy_kev);
  required("semiangle_mrad", o.semiangle_mrad, p.semiangle_mrad);
  required("scan_step_angstrom", o.scan_step_angstrom, p.scan_step_angstrom);
  const auto optional = [&](const char* file_key, const char* key, const std::optional<double>& given, double& dst) {
    if (given) {
      dst = *given;
      from_user(key, file_key);
    } else if (const std::optional<double> v = file_value(cal, who, file_key)) {
      dst = *v;
      from_file(file_key, file_key);
    }
  };
  optional("detector_mrad_per_pixel", "detector_mrad_per_pixel", o.detector_mrad_per_pixel, p.detector_mrad_per_pixel);
  optional("rotation_deg", "rotation_deg", o.rotation_deg, p.rotation_deg);
  optional("defocus_angstrom", "C1", o.C1, p.aberrations.C1);
  if (o.transpose) p.transpose = *o.transpose;
  if (o.A1) p.aberrations.A1 = *o.A1;
  if (o.A1_angle) p.aberrations.A1_angle = *o.A1_angle;
  if (o.C3) p.aberrations.C3 = *o.C3;
  if (o.disk_center) p.disk_center = o.disk_center;
  if (o.disk_radius) p.disk_radius = o.disk_radius;
  return p;
}

}  // namespace qgpu::optics
