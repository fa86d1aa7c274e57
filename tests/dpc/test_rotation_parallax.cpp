// Rotation calibration that survives defocus (dpc::calibrate_rotation(ds, dpc)) on simulated defocused and
// low-dose samples (true rotation 0, no transpose; known rotations / transposes by permuting the detector pixels).
#include <gtest/gtest.h>

#include <cstdio>

#include "dpc/com.hpp"
#include "dpc/rotation.hpp"
#include "parallax/parallax_fixtures.hpp"
#include "support/gpu_backends.hpp"

namespace qgpu::dpc {
namespace {

RotationResult calibrate(const Dataset& ds) { return calibrate_rotation(ds, centered_dpc(center_of_mass(ds))); }

void print(const char* name, const Dataset& ds, const RotationResult& r) {
  const RotationResult com = calibrate_rotation(centered_dpc(center_of_mass(ds)));
  std::printf("%s: CoM %.2f deg transpose %d confidence %.3f; decided by %s: %.2f deg transpose %d confidence %.3f\n",
              name, com.angle_deg, int(com.transpose), com.confidence, r.method.c_str(), r.angle_deg,
              int(r.transpose), r.confidence);
}

TEST(RotationParallax, DefocusedSampleLandsWithin1Degree) {
  const Dataset& ds = parallax::testing::dataset(150);
  const RotationResult r = calibrate(ds);
  print("C1 150", ds, r);
  EXPECT_LE(parallax::testing::angle_distance(r.angle_deg, 0.0), 1.0);
  EXPECT_FALSE(r.transpose);
  EXPECT_TRUE(r.determined);
  EXPECT_EQ(r.method, "parallax");  // the CoM curl minimum is not significant at this defocus (confidence ~0.01)
  EXPECT_EQ(r.provenance.parameters.at("decided_by").get<std::string>(), "parallax");
  EXPECT_FALSE(r.provenance.parameters.at("com_answer").at("determined").get<bool>());
  EXPECT_EQ(r.provenance.parameters.at("parallax").at("fit").at("sign_method").get<std::string>(),
            "nominal defocus sign");
}

// A DECTRIS master's calibration: energy, detector sampling and step from the instrument metadata, no semi-angle.
// The fallback keeps the file's values, puts placeholders for what is missing (and then finds the disk in the
// data), and still decides by the parallax; parallax::params_from_metadata takes each value present with its source.
TEST(RotationParallax, CalibrationWithoutASemiangleStillFallsBackToTheParallax) {
  const Dataset& base = parallax::testing::dataset(150);
  nlohmann::json md = base.metadata();
  nlohmann::json& cal = md["calibration"];
  const double energy = cal.at("energy_kev").get<double>(), step = cal.at("scan_step_angstrom").get<double>();
  cal.erase("semiangle_mrad");
  md["calibration_detail"] = {{"energy_kev", {{"value", energy}, {"unit", "keV"}, {"source", "NeXus photon_energy"}}}};
  const Dataset ds = Dataset::from_host(base.read(), md, base.provenance());
  const parallax::ParallaxParams p = parallax::params_from_metadata(ds);
  EXPECT_EQ(p.energy_kev, energy);
  EXPECT_EQ(p.scan_step_angstrom, step);
  EXPECT_EQ(p.semiangle_mrad, 0.0);
  EXPECT_EQ(p.sources.at("energy_kev"), "NeXus photon_energy");
  EXPECT_EQ(p.sources.at("scan_step_angstrom"), "file calibration/scan_step_angstrom");
  EXPECT_FALSE(p.sources.contains("semiangle_mrad"));
  const RotationResult r = calibrate(ds);
  EXPECT_EQ(r.method, "parallax");
  EXPECT_LE(parallax::testing::angle_distance(r.angle_deg, 0.0), 1.0);
  EXPECT_FALSE(r.transpose);
  EXPECT_EQ(r.provenance.parameters.at("parallax").at("optics").get<std::string>(),
            "placeholder semiangle_mrad (not in the file's calibration): the angle and transpose do not depend on it");
}

// In focus the CoM field is sharp: the curl minimum decides and the parallax is not run.
TEST(RotationParallax, InFocusTheComCurlDecides) {
  const Dataset& ds = parallax::testing::dataset(0);
  const RotationResult r = calibrate(ds);
  print("C1 0", ds, r);
  EXPECT_EQ(r.method, "com_curl");
  EXPECT_TRUE(r.determined);
  EXPECT_FALSE(r.provenance.parameters.contains("parallax"));
  EXPECT_LE(parallax::testing::angle_distance(r.angle_deg, 0.0), 1.0);
}

TEST(RotationParallax, LowDoseDefocusedSampleLandsWithin1Degree) {
  const Dataset& ds = parallax::testing::dataset(150, 1000);
  const RotationResult r = calibrate(ds);
  print("C1 150, 1000 counts", ds, r);
  EXPECT_LE(parallax::testing::angle_distance(r.angle_deg, 0.0), 1.0);
  EXPECT_FALSE(r.transpose);
  EXPECT_EQ(r.method, "parallax");
  EXPECT_TRUE(r.determined);
}

TEST(RotationParallax, KnownRotationAndTransposeOfADefocusedSample) {
  const Dataset& base = parallax::testing::dataset(150);
  const std::size_t D = base.shape().det_rows;
  // flip rows: transpose + 90 degrees; rotation by 180 degrees (the 180-degree choice)
  const Dataset flip = parallax::testing::permuted(base, [D](std::size_t r, std::size_t c) { return std::make_pair(D - 1 - r, c); });
  const RotationResult a = calibrate(flip);
  print("flip rows", flip, a);
  EXPECT_TRUE(a.transpose);
  EXPECT_LE(parallax::testing::angle_distance(a.angle_deg, 90.0), 1.0);
  const Dataset half = parallax::testing::permuted(base, [D](std::size_t r, std::size_t c) { return std::make_pair(D - 1 - r, D - 1 - c); });
  const RotationResult b = calibrate(half);
  print("rot180", half, b);
  EXPECT_FALSE(b.transpose);
  EXPECT_LE(parallax::testing::angle_distance(b.angle_deg, 180.0), 1.0);
}

}  // namespace
}  // namespace qgpu::dpc

namespace qgpu::dpc {
namespace {

// Issue 31, point 3: in focus there is no parallax signal, so the parallax must not vote, however its confidence
// compares with the CoM's: at 500 counts per frame, 17 degrees, the CoM answer stands (undetermined, with a warning)
// and the parallax fit is recorded with vote "none".
TEST(RotationParallax, InFocusTheParallaxDoesNotVote) {
  parallax::testing::TruthCase t;
  t.c1 = 0;
  t.dose = 500;
  const Dataset ds = parallax::testing::truth_dataset(t);
  const RotationResult r = calibrate(ds);
  print("C1 0, A1 30, 17 deg, 500 counts", ds, r);
  EXPECT_EQ(r.method, "com_curl");
  EXPECT_EQ(r.provenance.parameters.at("decided_by").get<std::string>(), "com_curl");
  EXPECT_EQ(r.provenance.parameters.at("parallax").at("vote").get<std::string>().rfind("none", 0), 0u);
  EXPECT_FALSE(r.provenance.parameters.at("parallax").at("fit").at("shifts_determined").get<bool>());
}

// Issue 31: the CoM-curl rotation in focus (C1 = 0, A1 = 30 A, 17 degrees, 48 x 48 scan) against the truth. The
// estimator (rotation.cpp, spectral_form) is within 0.26 degree at 1e5 counts per frame at both energies (central
// differences were 0.39 and 1.32 off); at 5000 counts the 48 x 48 scan holds about 1.5 degrees (rms over four seeds:
// 0.0-2.8 degrees off, the transpose right); at 500 counts it is undetermined (confidence < 0.1).
TEST(RotationParallax, InFocusComCurlAgainstTheTruth) {
  for (const double kv : {300.0, 80.0})
    for (const double dose : {500.0, 5000.0, 100000.0}) {
      parallax::testing::TruthCase t;
      t.energy_kev = kv;
      t.c1 = 0;
      t.dose = dose;
      t.transpose = kv < 100;
      const Dataset ds = parallax::testing::truth_dataset(t);
      const RotationResult r = calibrate(ds);
      print(kv > 100 ? "300 kV in focus" : "80 kV in focus", ds, r);
      EXPECT_EQ(r.method, "com_curl") << kv << " kV, " << dose;
      if (dose >= 1e5) {
        EXPECT_TRUE(r.determined);
        EXPECT_EQ(r.transpose, t.transpose);
        EXPECT_LE(parallax::testing::angle_distance(r.angle_deg, 17.0), 0.5) << kv << " kV";
      } else if (dose >= 5000) {
        EXPECT_EQ(r.transpose, t.transpose);
        EXPECT_LE(parallax::testing::angle_distance(r.angle_deg, 17.0), 3.0) << kv << " kV";
      } else {
        EXPECT_FALSE(r.determined) << kv << " kV";
        EXPECT_NE(rotation_warning(r), "");
      }
    }
}

// Defocused, transposed and turned by 17 degrees, no nominal defocus: the parallax decides, within 0.5 degree.
TEST(RotationParallax, TurnedTransposedDefocusedDetectorWithinHalfADegree) {
  for (const double dose : {5000.0, 100000.0}) {
    parallax::testing::TruthCase t;
    t.c1 = 120;
    t.transpose = true;
    t.dose = dose;
    const Dataset ds = parallax::testing::truth_dataset(t);
    const RotationResult r = calibrate(ds);
    print("C1 120, A1 30, T 17 deg", ds, r);
    EXPECT_EQ(r.method, "parallax");
    EXPECT_TRUE(r.determined);
    EXPECT_TRUE(r.transpose);
    EXPECT_LE(parallax::testing::angle_distance(r.angle_deg, 17.0), 0.5) << dose;
  }
}

// An unclear CoM answer (80 kV, C1 = 120 A, 1e5 counts per frame: 15.3 degrees, confidence 0.34; its reported
// uncertainty above kRotationSigmaDetermined makes it undetermined) yields to a determined parallax fit.
TEST(RotationParallax, UnclearComAnswerYieldsToAConfidentParallax) {
  parallax::testing::TruthCase t;
  t.energy_kev = 80;
  t.c1 = 120;
  t.dose = 100000;
  const Dataset ds = parallax::testing::truth_dataset(t);
  const RotationResult r = calibrate(ds);
  print("80 kV, C1 120, A1 30, 17 deg, 1e5 counts", ds, r);
  const nlohmann::json& com = r.provenance.parameters.at("com_answer");
  EXPECT_FALSE(com.at("determined").get<bool>());
  EXPECT_GT(com.at("angle_sigma_deg").get<double>(), kRotationSigmaDetermined);
  EXPECT_LT(com.at("confidence").get<double>(), kComTrusted);
  EXPECT_EQ(r.method, "parallax");
  EXPECT_FALSE(r.transpose);
  EXPECT_LE(parallax::testing::angle_distance(r.angle_deg, 17.0), 0.5);
}

// On a backend without the parallax (vulkan) the defocused sample keeps the CoM answer with its low confidence: the
// parallax is not run anywhere else, the provenance and the warning say why it did not vote.
TEST(RotationParallax, WithoutTheParallaxOnTheBackendTheComAnswerStandsAndSaysWhy) {
  QGPU_REQUIRE_BACKEND(Backend::vulkan);
  const Dataset vk = parallax::testing::dataset(150).to_vulkan();
  const RotationResult r = calibrate(vk);
  const RotationResult com = calibrate_rotation(centered_dpc(center_of_mass(parallax::testing::dataset(150))));
  EXPECT_EQ(r.method, "com_curl");
  EXPECT_FALSE(r.determined);
  EXPECT_NEAR(r.angle_deg, com.angle_deg, 1e-3);  // the cpu reference's CoM answer (CoM is bit for bit on vulkan)
  EXPECT_EQ(r.transpose, com.transpose);
  const auto& px = r.provenance.parameters.at("parallax");
  EXPECT_EQ(px.at("vote").get<std::string>(), "none: the parallax does not run on this backend");
  EXPECT_NE(px.at("error").get<std::string>().find("vulkan"), std::string::npos);
  EXPECT_NE(rotation_warning(r).find("parallax fit that decides defocused data did not run"), std::string::npos)
      << rotation_warning(r);
}

}  // namespace
}  // namespace qgpu::dpc
