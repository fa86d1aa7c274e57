// CPU reference virtual detectors against hand-computed sums.
#include <gtest/gtest.h>

#include "detector/virtual_detector.hpp"
#include "io/hdf5/load.hpp"
#include "support/temp_files.hpp"
#include "synthetic.hpp"

using namespace qgpu;
using namespace qgpu::detector;

TEST(VirtualCpu, MaskedSumEqualsHandSum) {
  const Dataset ds = test::synthetic<std::uint16_t>({3, 4, 10, 12}, 1000);
  const Mask m = annulus(10, 12, 4.5, 5.5, 1.5, 4.0);
  const Image<std::uint64_t> img = virtual_image(ds, m);
  ASSERT_EQ(img.rows, 3u);
  ASSERT_EQ(img.cols, 4u);
  const auto* d = reinterpret_cast<const std::uint16_t*>(ds.host_bytes().data());
  for (std::size_t f = 0; f < 12; ++f) {
    std::uint64_t want = 0;
    for (std::size_t r = 0; r < 10; ++r)
      for (std::size_t c = 0; c < 12; ++c) {
        const double d2 = (r - 4.5) * (r - 4.5) + (c - 5.5) * (c - 5.5);
        if (d2 >= 1.5 * 1.5 && d2 <= 16.0) want += d[f * 120 + r * 12 + c];
      }
    EXPECT_EQ(img.data[f], want) << "frame " << f;
  }
  EXPECT_EQ(img.provenance.backend, "cpu");
  EXPECT_EQ(img.provenance.output_dtype, "uint64");
  EXPECT_EQ(img.provenance.parameters.at("mask").at("kind"), "annulus");
}

TEST(VirtualCpu, IntegerWeightsAndUint32Counts) {
  const Dataset ds = test::synthetic<std::uint32_t>({2, 2, 4, 4}, 4000000000u);
  std::vector<std::uint32_t> w(16);
  for (std::size_t i = 0; i < 16; ++i) w[i] = std::uint32_t(i % 3);
  const Image<std::uint64_t> img = virtual_image(ds, from_weights(4, 4, w));
  const auto* d = reinterpret_cast<const std::uint32_t*>(ds.host_bytes().data());
  for (std::size_t f = 0; f < 4; ++f) {
    std::uint64_t want = 0;
    for (std::size_t k = 0; k < 16; ++k) want += std::uint64_t(d[f * 16 + k]) * (k % 3);
    EXPECT_EQ(img.data[f], want);
  }
}

TEST(VirtualCpu, BrightFieldDiskOfTheSample) {
  sample::SampleSpec s;
  s.scan_rows = s.scan_cols = 6;
  s.det_rows = s.det_cols = 48;
  const std::string path = test::write_small_sample("bf.h5", s);
  io::LoadOptions o;
  o.backend = "cpu";
  const Dataset ds = io::load(path, o);
  const DiskFit fit = fit_bf_disk(ds);
  // The simulator puts the zero beam at (24, 24) with radius 48/6 = 8 pixels.
  EXPECT_NEAR(fit.center_row, 24.0, 0.5);
  EXPECT_NEAR(fit.center_col, 24.0, 0.5);
  EXPECT_NEAR(fit.radius, 8.0, 1.0);
  const Image<std::uint64_t> bright = bf(ds);
  const Image<std::uint64_t> dark = adf(ds, 12.0, 30.0);
  const Image<std::uint64_t> all = virtual_image(ds, from_weights(48, 48, std::vector<std::uint32_t>(48 * 48, 1)));
  for (std::size_t i = 0; i < 36; ++i) {
    EXPECT_GT(bright.data[i], 10 * dark.data[i]);  // weak phase object: most electrons stay in the disk
    EXPECT_LE(bright.data[i] + dark.data[i], all.data[i]);
  }
  const Image<std::uint64_t> sum = sum_pattern(ds);
  std::uint64_t total = 0, pattern_total = 0;
  for (auto v : all.data) total += v;
  for (auto v : sum.data) pattern_total += v;
  EXPECT_EQ(total, pattern_total);
}

TEST(VirtualCpu, FittedDiskDefaultsRecordTheFitAndGivenOnesSkipIt) {
  const Dataset ds = test::disk_frames({4, 5, 40, 44}, 18.5, 21.25, 7, 300);
  const DiskFit fit = fit_bf_disk(ds);
  EXPECT_NEAR(fit.radius, 7, 1);
  EXPECT_NEAR(fit.center_row, 18.5, 0.5);
  EXPECT_NEAR(fit.center_col, 21.25, 0.5);
  EXPECT_TRUE(fit.confident());
  const Image<std::uint64_t> fitted = bf(ds);
  const nlohmann::json& q = fitted.provenance.parameters;
  ASSERT_TRUE(q.contains("bf_disk_fit"));
  EXPECT_EQ(q["bf_disk_fit"]["radius"], fit.radius);
  EXPECT_EQ(q["bf_disk_fit"]["confidence"], fit.confidence);
  EXPECT_EQ(q["bf_disk_fit"]["radius_source"], "fitted");
  EXPECT_FALSE(bf(ds, 5.0, Center{18, 21}).provenance().parameters.contains("bf_disk_fit"));
  const Image<std::uint64_t> centre_given = bf(ds, {}, Center{18, 21});
  EXPECT_EQ(centre_given.provenance.parameters["bf_disk_fit"]["center_source"], "given");
  EXPECT_EQ(centre_given.data, bf(ds, fit.radius, Center{18, 21}).counts("test").data);

  // Given centre and radius: no fit at all (an all-dark dataset has none), exact default ADF radii.
  const Dataset dark = test::synthetic<std::uint16_t>({2, 3, 40, 44}, 0);
  EXPECT_THROW(fit_bf_disk(dark), InvalidArgument);
  const AnnulusRadii r = default_adf_radii(dark, Center{20, 22}, 5.0);
  EXPECT_DOUBLE_EQ(r.inner, 6.0);
  EXPECT_DOUBLE_EQ(r.outer, 15.0);
  const AnnulusRadii edge = default_adf_radii(dark, Center{20, 22}, 8.0);  // 3 x 8 = 24 > 19 px to the edge
  EXPECT_DOUBLE_EQ(edge.outer, 19.0);
  EXPECT_EQ(bf(dark, 5.0, Center{20, 22}).counts("test").data, std::vector<std::uint64_t>(6, 0));
  // The radius given, the centre fitted.
  const AnnulusRadii rc = default_adf_radii(ds, {}, 4.0);
  EXPECT_DOUBLE_EQ(rc.inner, 4.8);
  EXPECT_DOUBLE_EQ(rc.outer, 12.0);
}

TEST(VirtualCpu, MaxPatternIsThePerPixelMaximumOverFrames) {
  const Dataset ds = test::synthetic<std::uint16_t>({5, 7, 9, 600}, 65535);  // 5400 pixels: several blocks
  const Image<std::uint64_t> most = max_pattern(ds);
  ASSERT_EQ(most.rows, 9u);
  ASSERT_EQ(most.cols, 600u);
  const HostArray4D all = ds.read();
  const std::uint16_t* c = all.as<std::uint16_t>();
  std::vector<std::uint64_t> want(9 * 600, 0);
  for (std::size_t f = 0; f < 35; ++f)
    for (std::size_t k = 0; k < want.size(); ++k) want[k] = std::max<std::uint64_t>(want[k], c[f * want.size() + k]);
  EXPECT_EQ(most.data, want);
  EXPECT_EQ(most.provenance.operation, "detector.max_pattern");
  EXPECT_GT(*std::max_element(want.begin(), want.end()), 60000u);  // the synthetic counts reach the dtype's top
}

TEST(VirtualCpu, MaskMustMatchTheDetector) {
  const Dataset ds = test::synthetic<std::uint8_t>({2, 2, 8, 8}, 10);
  EXPECT_THROW(virtual_image(ds, disk(9, 8, 4, 4, 2)), InvalidArgument);
}

TEST(VirtualCpu, SignedWeightsGiveExactInt64) {
  const Dataset ds = test::synthetic<std::uint32_t>({3, 2, 5, 6}, 1000000000u);
  SignedMask m{5, 6, std::vector<std::int64_t>(30)};
  for (std::size_t i = 0; i < 30; ++i) m.weights[i] = std::int64_t(i % 5) - 2;  // -2..2
  m.weights[7] = -4294967295ll;  // the most negative weight allowed
  const Image<std::int64_t> img = virtual_image(ds, m);
  const auto* d = reinterpret_cast<const std::uint32_t*>(ds.host_bytes().data());
  for (std::size_t f = 0; f < 6; ++f) {
    __int128 want = 0;  // independent: 128-bit sum of the signed products
    for (std::size_t k = 0; k < 30; ++k) want += __int128(d[f * 30 + k]) * m.weights[k];
    EXPECT_EQ(img.data[f], std::int64_t(want)) << "frame " << f;
  }
  EXPECT_EQ(img.provenance.output_dtype, "int64");
  EXPECT_EQ(img.provenance.backend, "cpu");
  // All-negative weights: a negative image, not a wrapped uint64.
  SignedMask neg{5, 6, std::vector<std::int64_t>(30, -1)};
  const Image<std::int64_t> n = virtual_image(ds, neg);
  for (std::size_t f = 0; f < 6; ++f) {
    std::int64_t want = 0;
    for (std::size_t k = 0; k < 30; ++k) want -= std::int64_t(d[f * 30 + k]);
    EXPECT_EQ(n.data[f], want);
  }
}

TEST(VirtualCpu, SignedWeightsOutOfRangeOrAllZeroAreRejected) {
  const Dataset ds = test::synthetic<std::uint16_t>({2, 2, 4, 4}, 100);
  EXPECT_THROW(virtual_image(ds, SignedMask{4, 4, std::vector<std::int64_t>(16, 0)}), InvalidArgument);
  SignedMask big{4, 4, std::vector<std::int64_t>(16, 1)};
  big.weights[3] = -4294967296ll;
  EXPECT_THROW(virtual_image(ds, big), InvalidArgument);
  EXPECT_THROW(virtual_image(ds, SignedMask{4, 4, std::vector<std::int64_t>(15, 1)}), InvalidArgument);
  EXPECT_THROW(virtual_image(ds, SignedMask{4, 5, std::vector<std::int64_t>(20, 1)}), InvalidArgument);
  // A sum beyond the int64 range is an error, never a wrapped value: 4e9 counts x (2^32 - 1) > 2^63.
  const Dataset bright = test::synthetic<std::uint32_t>({1, 1, 2, 2}, 4000000000u);
  const auto* d = reinterpret_cast<const std::uint32_t*>(bright.host_bytes().data());
  std::size_t brightest = 0;
  for (std::size_t k = 0; k < 4; ++k) brightest = d[k] > d[brightest] ? k : brightest;
  SignedMask huge{2, 2, std::vector<std::int64_t>(4, 0)};
  huge.weights[brightest] = -4294967295ll;
  if (std::uint64_t(d[brightest]) * 4294967295ull > std::uint64_t(INT64_MAX))
    EXPECT_THROW(virtual_image(bright, huge), InvalidArgument);
}
