// The DPC pipeline (dpc/pipeline.hpp) against the same steps called one by one: centre of mass, centred DPC,
// calibrate_rotation(ds, dpc) (parallax fallback), rotate_field, idpc. Equal bit for bit (same functions, same
// order); plus the given-rotation, keep-going and error paths.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/error.hpp"
#include "dpc/pipeline.hpp"
#include "dpc_fixtures.hpp"
#include "parallax/parallax_fixtures.hpp"

namespace qgpu::dpc {
namespace {

TEST(DpcPipeline, WholeChainEqualsTheStepsOnADefocusedSample) {
  const Dataset& ds = parallax::testing::dataset(150);
  PipelineParams p;
  p.idpc = true;
  std::vector<std::string> steps;
  p.on_step = [&](const std::string& s) { steps.push_back(s); };
  const PipelineResult r = run_pipeline(ds, p);

  const ComResult com = center_of_mass(ds);
  const DpcResult d = centered_dpc(com);
  const RotationResult rot = calibrate_rotation(ds, d);
  const auto [fr, fc] = rotate_field(d, rot.angle_deg, rot.transpose);
  const Image<float> phi = idpc(fr, fc);

  EXPECT_EQ(steps, (std::vector<std::string>{"dpc", "rotation", "field", "idpc"}));
  EXPECT_EQ(r.com.com_row.data, com.com_row.data);
  EXPECT_EQ(r.dpc.dpc_col.data, d.dpc_col.data);
  ASSERT_TRUE(r.calibration.has_value());
  EXPECT_EQ(r.calibration->method, "parallax");  // the CoM curl is not significant at this defocus
  EXPECT_EQ(r.calibration->method, rot.method);
  EXPECT_EQ(r.rotation.angle_deg, rot.angle_deg);
  EXPECT_EQ(r.rotation.transpose, rot.transpose);
  EXPECT_TRUE(r.has_field());
  EXPECT_EQ(r.field_row.data, fr.data);
  EXPECT_EQ(r.field_col.data, fc.data);
  ASSERT_TRUE(r.idpc.has_value());
  EXPECT_EQ(r.idpc->data, phi.data);
}

TEST(DpcPipeline, GivenRotationAndReferenceAreUsedWithoutCalibrating) {
  const Dataset ds = testing::poisson_dataset<std::uint16_t>({6, 5, 16, 16}, 80.0, 7);
  PipelineParams p;
  p.rotation = Rotation{30, true};
  p.reference = std::pair<double, double>{7.5, 8.25};
  std::vector<std::string> steps;
  p.on_step = [&](const std::string& s) { steps.push_back(s); };
  int calibrations = 0;
  const PipelineResult r = run_pipeline(center_of_mass(ds), p, [&](const DpcResult& d) {
    ++calibrations;
    return calibrate_rotation(d);
  });
  EXPECT_EQ(calibrations, 0);
  EXPECT_FALSE(r.calibration.has_value());
  EXPECT_EQ(steps, (std::vector<std::string>{"dpc", "field"}));
  EXPECT_EQ(r.dpc.ref_row, 7.5);
  EXPECT_EQ(r.dpc.ref_col, 8.25);
  const DpcResult d = centered_dpc(center_of_mass(ds), std::pair<double, double>{7.5, 8.25});
  const auto [fr, fc] = rotate_field(d, 30, true);
  EXPECT_EQ(r.field_row.data, fr.data);
  EXPECT_EQ(r.field_col.data, fc.data);
  EXPECT_FALSE(r.idpc.has_value());
}

// A 2x2 scan is too small to calibrate (maps under 3x3): an error, or CoM and DPC without a field when asked.
TEST(DpcPipeline, CalibrationFailureRaisesOrKeepsGoing) {
  const Dataset ds = testing::poisson_dataset<std::uint16_t>({2, 2, 16, 16}, 80.0, 3, false);
  PipelineParams p;
  p.idpc = true;
  EXPECT_THROW(run_pipeline(ds, p), InvalidArgument);
  p.keep_going_without_rotation = true;
  const PipelineResult r = run_pipeline(ds, p);
  EXPECT_FALSE(r.has_field());
  EXPECT_NE(r.rotation_error.find("rotation calibration failed: "), std::string::npos) << r.rotation_error;
  EXPECT_EQ(r.dpc.dpc_row.data, centered_dpc(center_of_mass(ds)).dpc_row.data);
  EXPECT_TRUE(r.field_row.data.empty());
  EXPECT_FALSE(r.idpc.has_value());
}

TEST(DpcPipeline, FromACentredFieldNeedsARotationOrACalibrator) {
  const Dataset ds = testing::poisson_dataset<std::uint16_t>({4, 4, 16, 16}, 80.0, 5, false);
  const DpcResult d = centered_dpc(center_of_mass(ds));
  EXPECT_THROW(run_pipeline(d, PipelineParams{}), InvalidArgument);
  PipelineParams p;
  p.rotation = Rotation{90, false};
  const PipelineResult r = run_pipeline(d, p);
  const auto [fr, fc] = rotate_field(d, 90, false);
  EXPECT_EQ(r.field_row.data, fr.data);
  EXPECT_EQ(r.field_col.data, fc.data);
  EXPECT_TRUE(r.com.com_row.data.empty());
}

}  // namespace
}  // namespace qgpu::dpc
