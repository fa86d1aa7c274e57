// The optics room: one resolver of file calibration + overrides, the shared checks, the BF-disk pixel groups with an
// explicit crop origin. Expected values are exact (analytic groupings, the numbers put into the metadata).
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "optics/bf_groups.hpp"
#include "optics/probe_optics.hpp"
#include "optics/resolve.hpp"
#include "parallax/parallax.hpp"
#include "ssb/params.hpp"

namespace qgpu::optics {
namespace {

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  return "(no error)";
}

std::vector<std::uint32_t> all_pixels(std::size_t rows, std::size_t cols) {
  std::vector<std::uint32_t> v;
  for (std::size_t q = 0; q < rows * cols; ++q) v.push_back(std::uint32_t(q));
  return v;
}

TEST(OpticsGroups, TwoByTwoBlocksOfAFourByFourDetector) {
  const auto g = group_pixels(all_pixels(4, 4), 4, 2);
  const std::vector<std::vector<std::uint32_t>> expected = {{0, 1, 4, 5}, {2, 3, 6, 7}, {8, 9, 12, 13}, {10, 11, 14, 15}};
  EXPECT_EQ(g, expected);
}

TEST(OpticsGroups, TheOriginShiftsTheBlocksOntoTheWholeDetectorsGrid) {
  // a crop starting at whole-detector row 1, col 0: whole rows 1 | 2, 3 | 4 -> crop rows 0 | 1, 2 | 3
  const auto g = group_pixels(all_pixels(4, 4), 4, 2, {1, 0});
  const std::vector<std::vector<std::uint32_t>> expected = {{0, 1}, {2, 3}, {4, 5, 8, 9}, {6, 7, 10, 11}, {12, 13}, {14, 15}};
  EXPECT_EQ(g, expected);
}

TEST(OpticsGroups, ACropGroupsTheSamePixelsAsTheWholeDetector) {  // whole detector 9 x 11
  const std::size_t cols = 11, bin = 3, r0 = 2, c0 = 4, cr = 5, cc = 6;  // crop rows 2..6, cols 4..9
  std::vector<std::uint32_t> whole_px, crop_px;
  for (std::size_t r = r0; r < r0 + cr; ++r)
    for (std::size_t c = c0; c < c0 + cc; ++c) {
      whole_px.push_back(std::uint32_t(r * cols + c));
      crop_px.push_back(std::uint32_t((r - r0) * cc + (c - c0)));
    }
  const auto whole = group_pixels(whole_px, cols, bin);
  const auto crop = group_pixels(crop_px, cc, bin, {r0, c0});
  ASSERT_EQ(whole.size(), crop.size());
  for (std::size_t i = 0; i < whole.size(); ++i) {
    ASSERT_EQ(whole[i].size(), crop[i].size()) << i;
    for (std::size_t k = 0; k < whole[i].size(); ++k) {
      const std::uint32_t q = crop[i][k];
      EXPECT_EQ(whole[i][k], (q / cc + r0) * cols + q % cc + c0) << i << " " << k;
    }
  }
  EXPECT_NE(group_pixels(crop_px, cc, bin).size(), crop.size());  // without the origin the blocks differ
  EXPECT_THROW(group_pixels(crop_px, cc, 0), InvalidArgument);
}

nlohmann::json calibration() {
  return {{"calibration",
           {{"energy_kev", 300.0}, {"semiangle_mrad", 20.0}, {"scan_step_angstrom", 0.5},
            {"detector_mrad_per_pixel", 0.8}, {"rotation_deg", 12.0}, {"defocus_angstrom", -150.0}}},
          {"calibration_detail", {{"energy_kev", {{"source", "sidecar HT"}}}}}};
}

TEST(OpticsResolve, TheFilesValuesWithTheirSourcesAndOverridesOnTop) {
  Overrides o;
  o.semiangle_mrad = 25.0;
  o.disk_radius = 12.0;
  const ProbeOptics p = resolve(calibration(), o, "parallax", Missing::refuse);
  EXPECT_EQ(p.energy_kev, 300.0);
  EXPECT_EQ(p.semiangle_mrad, 25.0);
  EXPECT_EQ(p.scan_step_angstrom, 0.5);
  EXPECT_EQ(p.detector_mrad_per_pixel, 0.8);
  EXPECT_EQ(p.rotation_deg, 12.0);
  EXPECT_EQ(p.aberrations.C1, -150.0);
  EXPECT_EQ(*p.disk_radius, 12.0);
  EXPECT_EQ(p.sources.at("energy_kev"), "sidecar HT");
  EXPECT_EQ(p.sources.at("semiangle_mrad"), "given (parallax: semiangle_mrad)");
  EXPECT_EQ(p.sources.at("scan_step_angstrom"), "file calibration/scan_step_angstrom");
  EXPECT_EQ(problem(p), "");
  EXPECT_EQ(*nominal_disk_radius(p.semiangle_mrad, p.detector_mrad_per_pixel), 25.0 / 0.8);
  EXPECT_FALSE(nominal_disk_radius(20.0, 0.0).has_value());
}

TEST(OpticsResolve, MissingValuesAreRefusedOrLeftAsAsked) {
  nlohmann::json md = calibration();
  md["calibration"].erase("semiangle_mrad");
  EXPECT_EQ(message_of([&] { resolve(md, {}, "parallax", Missing::refuse, [](const std::string&) { return "--semiangle"; }); }),
            "parallax: semiangle_mrad is missing: not in the file's calibration and not given (--semiangle)");
  const ProbeOptics left = resolve(md, {}, "parallax", Missing::leave);
  EXPECT_EQ(left.semiangle_mrad, 0.0);
  EXPECT_EQ(left.energy_kev, 300.0);
  EXPECT_EQ(problem(left), "semiangle_mrad must be finite and > 0");
  md["calibration"]["energy_kev"] = "300";
  EXPECT_EQ(message_of([&] { resolve(md, {}, "ssb", Missing::leave); }),
            "ssb: the file's calibration/energy_kev is not a number");
  Overrides bad;
  bad.energy_kev = -1.0;
  EXPECT_EQ(message_of([&] { check_overrides(bad, "parallax"); }),
            "parallax: energy_kev must be a finite number > 0, got -1");
}

TEST(OpticsResolve, SsbAndParallaxResolveTheSameOptics) {
  Overrides o;
  o.energy_kev = 200.0;
  ssb::ParamOverrides so;
  so.energy_kev = 200.0;
  const ssb::SsbParams s = ssb::resolve_params(calibration(), so);
  const parallax::ParallaxParams x = parallax::resolve_params(calibration(), o);
  for (const auto& [a, b] : {std::pair{s.energy_kev, x.energy_kev}, {s.semiangle_mrad, x.semiangle_mrad},
                             {s.scan_step_angstrom, x.scan_step_angstrom},
                             {s.detector_mrad_per_pixel, x.detector_mrad_per_pixel}})
    EXPECT_EQ(a, b);
  EXPECT_EQ(s.energy_kev, 200.0);
  EXPECT_EQ(x.c1_sign_hint, -1.0);  // the sign of the file's defocus_angstrom
  EXPECT_EQ(s.sources.at("energy_kev"), "given (ssb: energy_kev)");
  EXPECT_EQ(x.sources.at("energy_kev"), "given (parallax: energy_kev)");
  EXPECT_FALSE(x.sources.contains("rotation_deg"));  // parallax fits the rotation
}

TEST(OpticsResolve, ParallaxSettingsAreCheckedInOnePlaceWithTheCallersNames) {
  parallax::ParallaxParams p;
  EXPECT_EQ(message_of([&] { parallax::check_settings(p); }), "(no error)");
  p.upsample = 9;
  EXPECT_EQ(message_of([&] { parallax::check_settings(p); }), "parallax: upsample must be in 1..8");
  EXPECT_EQ(message_of([&] { parallax::check_settings(p, [](const std::string& k) { return "--" + k; }); }),
            "--upsample must be in 1..8");
  p.upsample = 2;
  p.edge_px = -1;
  EXPECT_EQ(message_of([&] { parallax::check_settings(p); }), "parallax: edge_px must be >= 0");
  p.edge_px = 1;
  p.search_px = 0;
  EXPECT_EQ(message_of([&] { parallax::check_settings(p); }), "parallax: search_px must be in 1..64");
}

}  // namespace
}  // namespace qgpu::optics
