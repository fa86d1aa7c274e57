// workflow::DatasetProducts answers exactly what the detector::/dpc:: calls on its dataset answer (the one-process
// side of the image/cache/SSB workflows), and the derived products have one implementation.
#include <gtest/gtest.h>

#include <cstring>

#include "detector/synthetic.hpp"
#include "workflow/scan_products.hpp"

namespace qgpu {

namespace {

Dataset disk_dataset() {  // a bright disk (counts 50..59) around (9, 11) of radius 4 on a dim background (0..2)
  Dataset noise = test::synthetic<std::uint16_t>({5, 6, 20, 24}, 2, 11);
  HostArray4D h = noise.read();
  for (std::size_t f = 0; f < 30; ++f)
    for (std::size_t r = 0; r < 20; ++r)
      for (std::size_t c = 0; c < 24; ++c)
        if ((double(r) - 9) * (double(r) - 9) + (double(c) - 11) * (double(c) - 11) <= 16)
          h.as<std::uint16_t>()[(f * 20 + r) * 24 + c] = std::uint16_t(50 + (f + r + c) % 10);
  return Dataset::from_host(std::move(h), {{"calibration", {{"energy_kev", 300}}}}, noise.provenance());
}

}  // namespace

TEST(ScanProducts, DatasetProductsEqualTheDetectorAndDpcCalls) {
  const Dataset ds = disk_dataset();
  workflow::DatasetProducts src(ds);
  EXPECT_EQ(src.shape(), ds.shape());
  EXPECT_EQ(src.metadata()["calibration"]["energy_kev"], 300);
  EXPECT_EQ(src.summed().counts("test").data, detector::sum_pattern(ds).counts("test").data);
  EXPECT_EQ(src.mean_pattern().data, detector::mean_pattern(ds).data);
  const detector::DiskFit a = src.fit_bf_disk(), b = detector::fit_bf_disk(ds);
  EXPECT_EQ(a.center_row, b.center_row);
  EXPECT_EQ(a.center_col, b.center_col);
  EXPECT_EQ(a.radius, b.radius);
  EXPECT_NEAR(a.center_row, 9, 1e-9);
  EXPECT_NEAR(a.center_col, 11, 1e-9);
  const detector::AnnulusRadii ra = src.default_adf_radii(), rb = detector::default_adf_radii(ds);
  EXPECT_EQ(ra.inner, rb.inner);
  EXPECT_EQ(ra.outer, rb.outer);
  EXPECT_EQ(src.bf_with_defaults({}, {}).counts("test").data, detector::bf(ds).counts("test").data);
  EXPECT_EQ(src.bf_with_defaults(2.5, {}).counts("test").data, detector::bf(ds, 2.5).counts("test").data);
  EXPECT_EQ(src.adf(ra.inner, ra.outer, src.center_or_fit({})).counts("test").data, detector::adf(ds, rb.inner, rb.outer).counts("test").data);
  const dpc::ComResult c1 = src.center_of_mass(), c2 = dpc::center_of_mass(ds);
  EXPECT_EQ(c1.com_row.data, c2.com_row.data);
  EXPECT_EQ(c1.com_col.data, c2.com_col.data);
  detector::Mask all = detector::from_weights(20, 24, std::vector<std::uint32_t>(480, 1));
  const Image<std::uint64_t> totals = src.virtual_image(all, "detector.frame_totals");
  EXPECT_EQ(totals.provenance.operation, "detector.frame_totals");
  EXPECT_EQ(totals.data, detector::virtual_image(ds, all).counts("test").data);
}

TEST(ScanProducts, FitFromASumPatternIsTheDatasetFit) {
  const Dataset ds = disk_dataset();
  const detector::DiskFit a = detector::fit_bf_disk(detector::sum_pattern(ds)), b = detector::fit_bf_disk(ds);
  EXPECT_EQ(a.center_row, b.center_row);
  EXPECT_EQ(a.radius, b.radius);
  Image<std::uint64_t> empty;
  empty.rows = 2;
  empty.cols = 2;
  empty.data.assign(4, 0);
  EXPECT_THROW(detector::fit_bf_disk(empty), InvalidArgument);
}

TEST(ScanProducts, DetectorCropHoldsThoseFramePixelsOfEveryPosition) {
  const Dataset ds = disk_dataset();
  workflow::DatasetProducts src(ds);
  const Region box{4, 6, 11, 10};
  const Dataset crop = src.detector_crop(box);
  EXPECT_EQ(crop.shape(), (Shape4D{5, 6, 11, 10}));
  EXPECT_EQ(crop.backend(), Backend::cpu);
  EXPECT_EQ(crop.metadata(), ds.metadata());
  EXPECT_EQ(crop.provenance().parameters["detector_crop"]["row0"], 4);
  const HostArray4D want = ds.read({}, box), got = crop.read();
  ASSERT_EQ(got.bytes.size(), want.bytes.size());
  EXPECT_EQ(std::memcmp(got.bytes.data(), want.bytes.data(), got.bytes.size()), 0);
  // spot check against the full frames: position (3, 4), detector pixel (4 + 7, 6 + 2)
  const HostArray4D full = ds.read();
  EXPECT_EQ(got.as<std::uint16_t>()[((3 * 6 + 4) * 11 + 7) * 10 + 2],
            full.as<std::uint16_t>()[((3 * 6 + 4) * 20 + 11) * 24 + 8]);
}

}  // namespace qgpu
