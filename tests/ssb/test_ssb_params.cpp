// ssb::resolve_params: the file's calibration with a user's overrides, one function for the CLI, the service and
// Python. Values are checked against the metadata written here (exact: they are copied, not computed).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "core/error.hpp"
#include "ssb/params.hpp"

namespace qgpu::ssb {
namespace {

nlohmann::json metadata() {
  return {{"calibration",
           {{"energy_kev", 300.0}, {"semiangle_mrad", 25.0}, {"scan_step_angstrom", 0.5},
            {"detector_mrad_per_pixel", 1.25}, {"rotation_deg", 12.0}, {"defocus_angstrom", -40.0}}}};
}

std::string message_of(const nlohmann::json& md, const ParamOverrides& o, const ParamNamer& n = {}) {
  try {
    resolve_params(md, o, n);
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  return "no error";
}

TEST(SsbParams, FileValuesWithoutOverrides) {
  const SsbParams p = resolve_params(metadata(), {});
  EXPECT_EQ(p.energy_kev, 300.0);
  EXPECT_EQ(p.semiangle_mrad, 25.0);
  EXPECT_EQ(p.scan_step_angstrom, 0.5);
  EXPECT_EQ(p.detector_mrad_per_pixel, 1.25);
  EXPECT_EQ(p.rotation_deg, 12.0);
  EXPECT_EQ(p.aberrations.C1, -40.0);
  EXPECT_FALSE(p.transpose);
  EXPECT_EQ(p.weighting, Weighting::automatic);
  EXPECT_FALSE(p.disk_center.has_value());
  const SsbParams q = params_from_metadata(metadata());  // the same function without overrides
  EXPECT_EQ(q.energy_kev, 300.0);
  EXPECT_EQ(q.aberrations.C1, -40.0);
}

TEST(SsbParams, OverridesReplaceTheFileValues) {
  ParamOverrides o;
  o.energy_kev = 200;
  o.semiangle_mrad = 30;
  o.scan_step_angstrom = 0.25;
  o.detector_mrad_per_pixel = 2;
  o.rotation_deg = -7.5;
  o.transpose = true;
  o.C1 = 150;
  o.A1 = 3;
  o.A1_angle = 0.5;
  o.C3 = 1e4;
  o.disk_center = std::pair<double, double>{10.5, 11};
  o.disk_radius = 9;
  o.weighting = "wiener";
  const SsbParams p = resolve_params(metadata(), o);
  EXPECT_EQ(p.energy_kev, 200.0);
  EXPECT_EQ(p.semiangle_mrad, 30.0);
  EXPECT_EQ(p.scan_step_angstrom, 0.25);
  EXPECT_EQ(p.detector_mrad_per_pixel, 2.0);
  EXPECT_EQ(p.rotation_deg, -7.5);
  EXPECT_TRUE(p.transpose);
  EXPECT_EQ(p.aberrations.C1, 150.0);
  EXPECT_EQ(p.aberrations.A1, 3.0);
  EXPECT_EQ(p.aberrations.A1_angle, 0.5);
  EXPECT_EQ(p.aberrations.C3, 1e4);
  ASSERT_TRUE(p.disk_center.has_value());
  EXPECT_EQ(p.disk_center->first, 10.5);
  EXPECT_EQ(*p.disk_radius, 9.0);
  EXPECT_EQ(p.weighting, Weighting::wiener);
}

// Without a calibration in the file the user gives the three required values; a missing one is named.
TEST(SsbParams, NoCalibrationNeedsTheRequiredValues) {
  const nlohmann::json none = nlohmann::json::object();
  ParamOverrides o;
  o.energy_kev = 300;
  o.semiangle_mrad = 20;
  EXPECT_EQ(message_of(none, o), "ssb: scan_step_angstrom is missing: not in the file's calibration and not given");
  EXPECT_EQ(message_of(none, o, [](const std::string& k) { return "--" + k; }),
            "ssb: scan_step_angstrom is missing: not in the file's calibration and not given (--scan_step_angstrom)");
  o.scan_step_angstrom = 1;
  const SsbParams p = resolve_params(none, o);
  EXPECT_EQ(p.scan_step_angstrom, 1.0);
  EXPECT_EQ(p.detector_mrad_per_pixel, 0.0);  // from the disk radius later
  EXPECT_EQ(p.rotation_deg, 0.0);
  EXPECT_EQ(p.aberrations.C1, 0.0);
}

TEST(SsbParams, BadValuesAreNamed) {
  const auto named = [](const std::string& k) { return "--" + k; };
  ParamOverrides o;
  o.energy_kev = -5;
  EXPECT_EQ(message_of(metadata(), o, named), "--energy_kev must be a finite number > 0, got -5");
  EXPECT_EQ(message_of(metadata(), o), "ssb: energy_kev must be a finite number > 0, got -5");
  o = {};
  o.semiangle_mrad = 0;
  EXPECT_EQ(message_of(metadata(), o), "ssb: semiangle_mrad must be a finite number > 0, got 0");
  o = {};
  o.scan_step_angstrom = std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ(message_of(metadata(), o), "ssb: scan_step_angstrom must be a finite number > 0, got nan");
  o = {};
  o.rotation_deg = std::numeric_limits<double>::infinity();
  EXPECT_EQ(message_of(metadata(), o), "ssb: rotation_deg must be a finite number, got inf");
  o = {};
  o.C1 = 2e6;
  EXPECT_EQ(message_of(metadata(), o), "ssb: C1 must be within +-1e+06 angstrom, got 2e+06");
  o = {};
  o.disk_radius = -1;
  EXPECT_EQ(message_of(metadata(), o), "ssb: disk_radius must be a finite number > 0, got -1");
  o = {};
  o.weighting = "gamma";
  EXPECT_EQ(message_of(metadata(), o),
            "ssb: weighting: unknown weighting 'gamma', not one of auto, amplitude, phase, wiener");
  EXPECT_THROW(check_overrides(o), InvalidArgument);  // the same check, before any file is read
}

TEST(SsbParams, BadFileValuesAreNamed) {
  nlohmann::json md = metadata();
  md["calibration"]["energy_kev"] = -300.0;
  EXPECT_EQ(message_of(md, {}), "ssb: the file's calibration/energy_kev must be a finite number > 0, got -300");
  ParamOverrides o;
  o.energy_kev = 300;  // a user's value replaces the bad one
  EXPECT_EQ(resolve_params(md, o).energy_kev, 300.0);
  md = metadata();
  md["calibration"]["rotation_deg"] = "twelve";
  EXPECT_EQ(message_of(md, {}), "ssb: the file's calibration/rotation_deg is not a number");
}

}  // namespace
}  // namespace qgpu::ssb
