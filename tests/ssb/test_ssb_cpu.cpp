// SSB on the CPU reference: simulated weak phase objects are recovered (against the simulator's truth).
//
// Data (ssb_fixtures.hpp): 40 x 48 scan, 64 x 64 detector, 357 BF pixels, 60000 counts per frame. The truth is the
// object phase at the probe positions (sample::object_phase_at_scan). Measured on this data (floor 0.1):
// r = 0.955 in focus and 0.953 at C1 = 100 A with the true aberrations; std(phase) / std(truth) = 0.91 / 0.90
// (SSB transfers |Q| <= 2 alpha, the floor damps the thin ends of the band); with C1 = 0 on the 100 A data r = -0.59.
// At the simulator's default 4000 counts per frame r drops to 0.73 (noise), hence the raised dose.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "core/error.hpp"
#include "io/hdf5/load.hpp"
#include "ssb/ssb.hpp"
#include "ssb_fixtures.hpp"
#include "support/temp_files.hpp"

namespace qgpu::ssb {
namespace {

using testing::dataset;
using testing::pearson;
using testing::stddev;
using testing::true_params;
using testing::truth;

TEST(SsbCpu, ReconstructsTheInFocusPhase) {
  const SsbResult r = reconstruct(dataset(0), true_params(0));
  ASSERT_EQ(r.phase.rows, 40u);
  ASSERT_EQ(r.phase.cols, 48u);
  ASSERT_EQ(r.phase.data.size(), 40u * 48u);
  EXPECT_GE(pearson(r.phase.data, truth(0)), 0.9);  // measured 0.955
  const double ratio = stddev(r.phase.data) / stddev(truth(0));
  EXPECT_GT(ratio, 0.75);  // quantitative phase: measured 0.91
  EXPECT_LT(ratio, 1.1);
  // object = 1 + i phi_lin: amplitude = 1 / cos(phase).
  for (std::size_t i = 0; i < r.phase.data.size(); ++i)
    EXPECT_NEAR(double(r.amplitude.data[i]) * std::cos(double(r.phase.data[i])), 1.0, 1e-6);

  const Provenance& p = r.provenance;
  EXPECT_EQ(p.operation, "ssb.reconstruct");
  EXPECT_EQ(p.backend, "cpu");
  EXPECT_EQ(p.representation, "dense");
  EXPECT_EQ(p.input_dtype, "uint16");
  EXPECT_EQ(p.output_dtype, "float32");
  EXPECT_EQ(p.input_shape, (std::vector<std::size_t>{40, 48, 64, 64}));
  EXPECT_EQ(p.output_shape, (std::vector<std::size_t>{40, 48}));
  EXPECT_NEAR(p.parameters.at("wavelength_angstrom").get<double>(), 0.0196875, 1e-7);
  EXPECT_EQ(p.parameters.at("bf_pixels").get<std::size_t>(), 357u);  // pixels within 64/6 px of (32, 32)
  EXPECT_EQ(p.parameters.at("k_groups").get<std::size_t>(), 357u);
  EXPECT_EQ(p.parameters.at("detector_mrad_per_pixel_source"), "given");
  EXPECT_EQ(p.parameters.at("aberrations").at("C1").get<double>(), 0.0);
  EXPECT_EQ(r.phase.provenance.parameters.at("component"), "phase");
  EXPECT_EQ(r.amplitude.provenance.parameters.at("component"), "amplitude");
}

TEST(SsbCpu, DefocusedDataNeedsTheTrueAberrations) {
  const SsbParams p = true_params(100);
  ASSERT_EQ(p.aberrations.C1, 100.0);  // params_from_metadata reads the nominal defocus
  const SsbResult r = reconstruct(dataset(100), p);
  EXPECT_GE(pearson(r.phase.data, truth(100)), 0.9);  // measured 0.953
  EXPECT_EQ(r.provenance.parameters.at("aberrations").at("C1").get<double>(), 100.0);
  SsbParams wrong = p;
  wrong.aberrations.C1 = 0;
  EXPECT_LT(pearson(reconstruct(dataset(100), wrong).phase.data, truth(100)), 0.3);  // measured -0.59
  wrong.aberrations.C1 = -100;  // the sign convention matters
  EXPECT_LT(pearson(reconstruct(dataset(100), wrong).phase.data, truth(100)), 0.3);
}

TEST(SsbCpu, PreviewCorrelatesWithTheFullReconstruction) {
  const SsbParams p = true_params(100);
  const SsbResult full = reconstruct(dataset(100), p);
  const SsbResult p2 = preview(dataset(100), p, 2), p4 = preview(dataset(100), p);
  EXPECT_GE(pearson(p2.phase.data, full.phase.data), 0.8);  // measured 0.986
  EXPECT_GE(pearson(p4.phase.data, full.phase.data), 0.8);  // measured 0.957
  EXPECT_GE(pearson(p4.phase.data, truth(100)), 0.8);       // measured 0.934
  EXPECT_EQ(p4.provenance.operation, "ssb.preview");
  EXPECT_EQ(p4.provenance.parameters.at("detector_bin").get<std::size_t>(), 4u);
  EXPECT_EQ(p4.provenance.parameters.at("bf_pixels").get<std::size_t>(), 357u);
  EXPECT_LT(p4.provenance.parameters.at("k_groups").get<std::size_t>(), 40u);  // 4x4 blocks of the disk
  // Binning 1 is the full reconstruction.
  EXPECT_LT(testing::relative_l2(preview(dataset(100), p, 1), full), 1e-12);
}

// The detector turned by 90 degrees: new pixel (r, c) holds old pixel (c, 64 - r) (centre (32, 32)), so
// K_old = (K_new_col, -K_new_row) in (row, col) = rotate_field's matrix at t = -90 (= 270): rotation_deg = -90
// undoes it (the same angle dpc::calibrate_rotation reports for such data, docs/conventions.md).
TEST(SsbCpu, RotationBringsTheDetectorIntoTheScanFrame) {
  const Dataset& ds = dataset(100);
  const Shape4D& sh = ds.shape();
  HostArray4D rot;
  rot.shape = sh;
  rot.dtype = ds.dtype();
  rot.bytes.assign(ds.host_bytes().size(), 0);
  const auto* src = reinterpret_cast<const std::uint16_t*>(ds.host_bytes().data());
  auto* dst = rot.as<std::uint16_t>();
  for (std::size_t f = 0; f < sh.frames(); ++f)
    for (std::size_t r = 1; r < sh.det_rows; ++r)
      for (std::size_t c = 0; c < sh.det_cols; ++c)
        dst[f * 4096 + r * 64 + c] = src[f * 4096 + c * 64 + (64 - r)];
  const Dataset turned = Dataset::from_host(std::move(rot), ds.metadata(), ds.provenance());

  SsbParams p = true_params(100);
  p.disk_center = std::pair<double, double>{32.0, 32.0};
  const SsbResult ref = reconstruct(ds, p);
  p.rotation_deg = -90;
  const SsbResult r = reconstruct(turned, p);
  EXPECT_LT(testing::relative_l2(r, ref), 1e-6);  // the same K set in another order
  p.rotation_deg = 270;
  EXPECT_LT(testing::relative_l2(reconstruct(turned, p), ref), 1e-6);
  p.rotation_deg = 0;
  EXPECT_LT(pearson(reconstruct(turned, p).phase.data, truth(100)), 0.5);
  p.rotation_deg = 90;
  EXPECT_LT(pearson(reconstruct(turned, p).phase.data, truth(100)), 0.5);
}

TEST(SsbCpu, CalibrationFromTheBrightFieldDiskFit) {
  SsbParams p = true_params(0);
  p.detector_mrad_per_pixel = 0;  // from semiangle / fitted radius, centre from the fit
  const SsbResult r = reconstruct(dataset(0), p);
  const nlohmann::json& q = r.provenance.parameters;
  EXPECT_EQ(q.at("detector_mrad_per_pixel_source"), "semiangle / fitted BF disk radius");
  EXPECT_EQ(q.at("disk_center_source"), "fitted BF disk");
  EXPECT_NEAR(q.at("detector_mrad_per_pixel").get<double>(), 20.0 / (64.0 / 6.0), 0.05 * 20.0 / (64.0 / 6.0));
  EXPECT_NEAR(q.at("disk_center")[0].get<double>(), 32.0, 0.5);
  EXPECT_GE(pearson(r.phase.data, truth(0)), 0.9);
  // A given radius sets the pixel size when no pixel size is given.
  p.disk_radius = 64.0 / 6.0;
  const SsbResult given = reconstruct(dataset(0), p);
  EXPECT_NEAR(given.provenance.parameters.at("detector_mrad_per_pixel").get<double>(), 1.875, 1e-12);
}

TEST(SsbCpu, FromAFileThroughTheLoader) {
  sample::SampleSpec s;
  s.scan_rows = 24;
  s.scan_cols = 30;
  s.det_rows = 48;
  s.det_cols = 48;
  s.defocus_angstrom = 60;
  s.dose_per_frame = 60000;
  s.threads = 2;
  const std::string path = test::write_small_sample("ssb.h5", s);
  io::LoadOptions lo;
  lo.backend = "cpu";
  const Dataset ds = io::load(path, lo);
  const SsbParams p = params_from_metadata(ds);
  const sample::Sampling sm = sample::sampling(s);
  EXPECT_DOUBLE_EQ(p.energy_kev, 300.0);
  EXPECT_DOUBLE_EQ(p.semiangle_mrad, 20.0);
  EXPECT_DOUBLE_EQ(p.scan_step_angstrom, sm.scan_step_angstrom);
  EXPECT_DOUBLE_EQ(p.detector_mrad_per_pixel, sm.mrad_per_pixel);
  EXPECT_DOUBLE_EQ(p.aberrations.C1, 60.0);
  const SsbResult r = reconstruct(ds, p);
  EXPECT_GE(pearson(r.phase.data, sample::object_phase_at_scan(s)), 0.9);
}

TEST(SsbCpu, NonsenseParametersRaiseInvalidArgument) {
  const Dataset& ds = dataset(0);
  const SsbParams good = true_params(0);
  auto expect_invalid = [&](auto change) {
    SsbParams p = good;
    change(p);
    EXPECT_THROW(reconstruct(ds, p), InvalidArgument);
    EXPECT_THROW(preview(ds, p), InvalidArgument);
    FitOptions o;
    o.trials = 2;
    EXPECT_THROW(fit(ds, p, o), InvalidArgument);
  };
  const double nan = std::numeric_limits<double>::quiet_NaN();
  expect_invalid([](SsbParams& p) { p.energy_kev = 0; });
  expect_invalid([](SsbParams& p) { p.energy_kev = -300; });
  expect_invalid([&](SsbParams& p) { p.energy_kev = nan; });
  expect_invalid([](SsbParams& p) { p.semiangle_mrad = 0; });
  expect_invalid([](SsbParams& p) { p.semiangle_mrad = -20; });
  expect_invalid([](SsbParams& p) { p.scan_step_angstrom = 0; });
  expect_invalid([](SsbParams& p) { p.scan_step_angstrom = -0.3; });
  expect_invalid([](SsbParams& p) { p.detector_mrad_per_pixel = -1; });
  expect_invalid([](SsbParams& p) { p.disk_radius = -3.0; });
  expect_invalid([](SsbParams& p) { p.disk_center = std::pair<double, double>{100.0, 32.0}; });  // off the detector
  expect_invalid([](SsbParams& p) { p.disk_center = std::pair<double, double>{5.0, 32.0}; });    // disk cut off
  expect_invalid([](SsbParams& p) { p.detector_mrad_per_pixel = 0.2; });  // 100 px radius on a 64 px detector
  expect_invalid([&](SsbParams& p) { p.rotation_deg = nan; });
  expect_invalid([&](SsbParams& p) { p.aberrations.C3 = nan; });
  EXPECT_THROW(preview(ds, good, 0), InvalidArgument);

  FitOptions o;
  o.trials = 0;
  EXPECT_THROW(fit(ds, good, o), InvalidArgument);
  o = {};
  o.c1_min = 100;
  o.c1_max = -100;
  EXPECT_THROW(fit(ds, good, o), InvalidArgument);
  o = {};
  o.trials = 10;
  o.tpe_trials = 20;
  EXPECT_THROW(fit(ds, good, o), InvalidArgument);
  o = {};
  o.detector_bin = 0;
  EXPECT_THROW(fit(ds, good, o), InvalidArgument);
}

TEST(SsbCpu, MetadataWithoutCalibrationIsRejected) {
  const Dataset& ds = dataset(0);
  HostArray4D h = ds.read();
  const Dataset none = Dataset::from_host(h, nlohmann::json::object(), ds.provenance());
  EXPECT_THROW(params_from_metadata(none), InvalidArgument);
  nlohmann::json md = ds.metadata();
  md["calibration"].erase("scan_step_angstrom");
  const Dataset partial = Dataset::from_host(std::move(h), md, ds.provenance());
  EXPECT_THROW(params_from_metadata(partial), InvalidArgument);
}

}  // namespace
}  // namespace qgpu::ssb
