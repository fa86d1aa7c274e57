// Rotation calibration that survives defocus: the CoM curl minimum, or the parallax shift field when the CoM
// answer is not determined (see rotation.hpp).
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "core/error.hpp"
#include "dpc/rotation.hpp"
#include "parallax/parallax.hpp"

namespace qgpu::dpc {

RotationResult calibrate_rotation(const Dataset& ds, const DpcResult& dpc,
                                  std::optional<std::pair<double, double>> disk_center, std::optional<double> disk_radius,
                                  optics::DetectorOrigin detector_origin) {
  RotationResult com = calibrate_rotation(dpc);
  com.provenance.parameters["decided_by"] = "com_curl";
  if (com.confidence >= kComTrusted) return com;

  // The file's optics where it has them, placeholders for the rest: the angle and transpose do not depend on them.
  parallax::ParallaxParams p = parallax::params_from_metadata(ds);
  std::string placeholders;
  const auto fill = [&](double& v, double placeholder, const char* key) {
    if (v > 0) return;
    v = placeholder;
    placeholders += std::string(placeholders.empty() ? "" : ", ") + key;
  };
  fill(p.energy_kev, 300, "energy_kev");
  fill(p.semiangle_mrad, 20, "semiangle_mrad");
  fill(p.scan_step_angstrom, 1, "scan_step_angstrom");
  if (placeholders.find("semiangle") != std::string::npos) p.detector_mrad_per_pixel = 0;  // disk from the data
  const std::string optics =
      placeholders.empty() ? "file calibration"
                           : "placeholder " + placeholders + " (not in the file's calibration): the angle and transpose "
                                                             "do not depend on it";
  p.disk_center = disk_center;
  p.disk_radius = disk_radius;
  p.detector_origin = detector_origin;
  parallax::ParallaxResult px;
  try {
    px = parallax::fit_only(ds, p);
  } catch (const InvalidArgument& e) {  // e.g. a scan or BF disk too small for the parallax: keep the CoM answer
    com.provenance.parameters["parallax"] = {{"error", e.what()}};
    return com;
  } catch (const BackendUnavailable& e) {  // no parallax on the dataset's backend (vulkan): nothing runs elsewhere,
    com.provenance.parameters["parallax"] = {{"error", e.what()},  // the CoM answer stands with its confidence
                                             {"vote", "none: the parallax does not run on this backend"}};
    return com;
  }
  nlohmann::json disk;  // the BF disk the parallax used: given or fitted (with the fit's confidence)
  for (const char* k : {"disk_center", "disk_center_source", "disk_radius_px", "disk_radius_source", "bf_disk_fit"})
    if (px.provenance.parameters.contains(k)) disk[k] = px.provenance.parameters.at(k);
  nlohmann::json com_summary = {{"angle_deg", com.angle_deg},
                                {"transpose", com.transpose},
                                {"confidence", com.confidence},
                                {"angle_sigma_deg", com.angle_sigma_deg},
                                {"determined", com.determined}};
  if (!px.fit.shifts_determined()) {  // in focus or too noisy: no parallax signal, it does not vote
    com.provenance.parameters["parallax"] = {
        {"fit", parallax::fit_json(px.fit)},
        {"vote", "none: no shift field seen (fit confidence < 0.6: in focus or too noisy; or nearly rank one)"},
        {"optics", optics},
        {"disk", disk}};
    return com;
  }
  double angle = px.fit.rotation_deg, pc = std::min(px.fit.confidence, px.fit.sign_confidence);
  std::string rule180 = "parallax: " + px.fit.sign_method;
  // A determined CoM answer stands unless the parallax is determined (sign included) and more confident.
  if (com.determined && !(px.fit.sign_determined() && pc > com.confidence)) {
    com.provenance.parameters["parallax"] = {
        {"fit", parallax::fit_json(px.fit)},
        {"vote", px.fit.sign_determined() ? "none: less confident than the determined CoM answer"
                                          : "none: its sign is undetermined and the CoM answer is determined"},
        {"confidence", pc},
        {"optics", optics},
        {"disk", disk}};
    return com;
  }
  if (!px.fit.sign_determined()) {  // the CoM field's 180-degree rule at the parallax's angle and transpose
    const double skew = divergence_skewness(dpc, angle, px.fit.transpose);
    if (skew > 0) angle = std::fmod(angle + 180.0, 360.0);
    pc = std::min(px.fit.confidence, std::min(1.0, std::abs(skew)));
    rule180 = "CoM divergence skewed negative at the parallax's angle (the parallax's sign of C1 is undetermined)";
  }
  RotationResult r = com;  // keeps the CoM curves and curl / divergence of the CoM answer for reference
  r.method = "parallax";
  r.angle_deg = angle;
  r.transpose = px.fit.transpose;
  r.confidence = pc;
  r.angle_sigma_deg = std::numeric_limits<double>::quiet_NaN();  // the parallax fit gives no standard error
  r.determined = pc >= kRotationConfident;
  r.provenance.operation = "dpc.calibrate_rotation";
  r.provenance.parameters["angle_deg"] = r.angle_deg;
  r.provenance.parameters["transpose"] = r.transpose;
  r.provenance.parameters["confidence"] = r.confidence;
  r.provenance.parameters["angle_sigma_deg"] = nullptr;
  r.provenance.parameters["angle_sigma_rule"] = "none: decided by the parallax fit (see parallax.confidence)";
  r.provenance.parameters["determined"] = r.determined;
  r.provenance.parameters["decided_by"] = "parallax";
  r.provenance.parameters["com_answer"] = com_summary;
  r.provenance.parameters["parallax"] = {{"fit", parallax::fit_json(px.fit)},
                                         {"disk", disk},
                                         {"confidence", pc},
                                         {"confidence_rule", "min(fit confidence, confidence of the 180-degree choice)"},
                                         {"ambiguity_180", rule180},
                                         {"optics", optics},
                                         {"groups", px.det_row.size()},
                                         {"backend", px.provenance.backend}};
  r.provenance.parameters["warning"] = rotation_warning(r);
  return r;
}

}  // namespace qgpu::dpc
