// CPU reference load: HDF5 + bitshuffle plugin decode, regions and exact binning.
#include <gtest/gtest.h>

#include <tuple>

#include "core/error.hpp"
#include "device/device.hpp"
#include "io/hdf5/load.hpp"
#include "load_reference.hpp"
#include "support/temp_files.hpp"

using namespace qgpu;

namespace {

sample::SampleSpec spec(DType t, bool four_d = false) {
  sample::SampleSpec s;
  s.scan_rows = 6;
  s.scan_cols = 8;
  s.det_rows = 20;
  s.det_cols = 24;
  s.dtype = t;
  s.four_d = four_d;
  return s;
}

io::LoadOptions cpu() {
  io::LoadOptions o;
  o.backend = "cpu";
  return o;
}

}  // namespace

TEST(LoadCpu, RoundTripsEveryDtype) {
  for (DType t : {DType::u8, DType::u16, DType::u32}) {
    const sample::SampleSpec s = spec(t);
    const std::string path = test::write_small_sample(dtype_name(t) + ".h5", s);
    const Dataset ds = io::load(path, cpu());
    EXPECT_EQ(ds.backend(), Backend::cpu);
    EXPECT_EQ(ds.residency(), "host");
    EXPECT_EQ(ds.representation(), "dense");
    EXPECT_EQ(ds.dtype(), t);
    EXPECT_EQ(ds.shape(), (Shape4D{6, 8, 20, 24}));
    EXPECT_EQ(ds.provenance().backend, "cpu");
    EXPECT_EQ(ds.provenance().operation, "io.load");
    dispatch_count_dtype(t, [&](auto z) {
      using T = decltype(z);
      EXPECT_EQ(test::as_vector<T>(ds.read()), test::simulated<T>(s)) << dtype_name(t);
    });
  }
}

TEST(LoadCpu, FourDimensionalLayout) {
  const sample::SampleSpec s = spec(DType::u16, true);
  const std::string path = test::write_small_sample("4d.h5", s);
  const Dataset ds = io::load(path, cpu());
  EXPECT_EQ(test::as_vector<std::uint16_t>(ds.read()), test::simulated<std::uint16_t>(s));
}

TEST(LoadCpu, RegionsAndBinning) {
  const sample::SampleSpec s = spec(DType::u16);
  const std::string path = test::write_small_sample("r.h5", s);
  const auto all = test::simulated<std::uint16_t>(s);
  io::LoadOptions o = cpu();
  o.scan_region = {1, 2, 4, 6};
  o.detector_region = {2, 4, 12, 16};
  const Dataset cropped = io::load(path, o);
  EXPECT_EQ(cropped.shape(), (Shape4D{4, 6, 12, 16}));
  EXPECT_EQ(cropped.dtype(), DType::u16);
  EXPECT_EQ(test::as_vector<std::uint16_t>(cropped.read()),
            (test::expected_load<std::uint16_t, std::uint16_t>(s, all, o.scan_region, o.detector_region, 1, 1)));
  o.bin_scan = 2;
  o.bin_detector = 4;
  const Dataset binned = io::load(path, o);
  EXPECT_EQ(binned.shape(), (Shape4D{2, 3, 3, 4}));
  EXPECT_EQ(binned.dtype(), DType::u32);
  EXPECT_EQ(test::as_vector<std::uint32_t>(binned.read()),
            (test::expected_load<std::uint16_t, std::uint32_t>(s, all, o.scan_region, o.detector_region, 2, 4)));
}

TEST(LoadCpu, ReadReturnsTheRectangle) {
  const sample::SampleSpec s = spec(DType::u8);
  const std::string path = test::write_small_sample("rect.h5", s);
  const auto all = test::simulated<std::uint8_t>(s);
  const Dataset ds = io::load(path, cpu());
  const HostArray4D part = ds.read({3, 1, 2, 5}, {7, 3, 4, 9});
  EXPECT_EQ(part.shape, (Shape4D{2, 5, 4, 9}));
  EXPECT_EQ(test::as_vector<std::uint8_t>(part),
            (test::expected_load<std::uint8_t, std::uint8_t>(s, all, {3, 1, 2, 5}, {7, 3, 4, 9}, 1, 1)));
  EXPECT_THROW(ds.read({5, 0, 2, 1}), RegionError);
}

TEST(LoadCpu, ProgressReachesOne) {
  const sample::SampleSpec s = spec(DType::u16);
  const std::string path = test::write_small_sample("p.h5", s);
  io::LoadOptions o = cpu();
  o.batch_bytes = 1;  // one scan row per batch
  std::vector<double> seen;
  o.progress = [&](double f) { seen.push_back(f); };
  io::load(path, o);
  ASSERT_EQ(seen.size(), 7u);  // 0 first, then one call per row
  EXPECT_EQ(seen.front(), 0.0);
  EXPECT_DOUBLE_EQ(seen.back(), 1.0);
  EXPECT_TRUE(std::is_sorted(seen.begin(), seen.end()));
}

// Our host decoder (the default on cpu) and the HDF5 filter pipeline give the same counts for every dtype,
// layout, region and binning.
TEST(LoadCpu, OurDecoderEqualsTheHdf5Pipeline) {
  for (DType t : {DType::u8, DType::u16, DType::u32})
    for (bool four_d : {false, true}) {
      const sample::SampleSpec s = spec(t, four_d);
      const std::string path = test::write_small_sample(dtype_name(t) + (four_d ? "4d" : "3d") + "_dec.h5", s);
      for (const auto& [sr, dr, bs, bd] : {std::tuple{Region{}, Region{}, 1, 1}, {Region{1, 2, 4, 6}, Region{2, 4, 12, 16}, 2, 4},
                                            {Region{0, 1, 5, 3}, Region{}, 1, 2}}) {
        io::LoadOptions o = cpu();
        o.scan_region = sr;
        o.detector_region = dr;
        o.bin_scan = bs;
        o.bin_detector = bd;
        o.batch_bytes = 700;  // several batches
        o.decoder = "quantem";
        const Dataset ours = io::load(path, o);
        o.decoder = "hdf5";
        const Dataset ref = io::load(path, o);
        SCOPED_TRACE(path + " bins " + std::to_string(bs) + "," + std::to_string(bd));
        ASSERT_EQ(ours.shape(), ref.shape());
        ASSERT_EQ(ours.dtype(), ref.dtype());
        EXPECT_TRUE(ours.read().bytes == ref.read().bytes);
        EXPECT_NE(ours.provenance().parameters.at("decoder").get<std::string>().find("host bitshuffle+lz4"),
                  std::string::npos);
        EXPECT_EQ(ref.provenance().parameters.at("decoder"), "hdf5 filter plugin");
        EXPECT_TRUE(ours.provenance().parameters.contains("timing"));
      }
    }
}

TEST(LoadCpu, DecoderChoiceIsChecked) {
  const std::string path = test::write_small_sample("dc.h5", spec(DType::u16));
  io::LoadOptions o = cpu();
  o.decoder = "magic";
  EXPECT_THROW(io::load(path, o), InvalidArgument);
  o.backend = "cuda";
  o.decoder = "hdf5";
  if (detect().cuda_available) EXPECT_THROW(io::load(path, o), InvalidArgument);
}
