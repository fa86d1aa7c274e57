// Metadata and readiness without reading frame data.
#include <gtest/gtest.h>
#include <hdf5.h>

#include "io/hdf5/file_info.hpp"
#include "io/hdf5/bitshuffle_plugin.hpp"
#include "support/temp_files.hpp"

using namespace qgpu;

TEST(Inspect, ReportsLayoutFilterAndCalibration) {
  sample::SampleSpec s;
  s.scan_rows = 5;
  s.scan_cols = 7;
  s.det_rows = 24;
  s.det_cols = 32;
  s.dtype = DType::u16;
  const std::string path = test::write_small_sample("s.h5", s);
  const io::FileInfo fi = io::inspect(path);
  EXPECT_EQ(fi.dataset_path, "/entry/data/data");
  EXPECT_EQ(fi.dtype, DType::u16);
  EXPECT_EQ(fi.dims, (std::vector<std::size_t>{35, 24, 32}));
  EXPECT_EQ(fi.chunk_dims, (std::vector<std::size_t>{1, 24, 32}));
  EXPECT_EQ(fi.shape, (Shape4D{5, 7, 24, 32}));
  EXPECT_EQ(fi.scan_shape_source, "attribute scan_shape");
  EXPECT_TRUE(fi.one_frame_per_chunk);
  EXPECT_TRUE(fi.bitshuffle_lz4);
  EXPECT_EQ(fi.bitshuffle_block_elems, 4096u);
  ASSERT_EQ(fi.filters.size(), 1u);
  EXPECT_EQ(fi.filters[0].id, h5::kBitshuffleFilter);
  EXPECT_EQ(fi.chunks_expected, 35u);
  EXPECT_EQ(fi.chunks_written, 35u);
  EXPECT_TRUE(fi.ready);
  EXPECT_DOUBLE_EQ(fi.calibration.at("energy_kev").get<double>(), 300.0);
  EXPECT_DOUBLE_EQ(fi.calibration.at("semiangle_mrad").get<double>(), 20.0);
  EXPECT_DOUBLE_EQ(fi.calibration.at("disk_radius_px").get<double>(), 4.0);
}

TEST(Inspect, FourDimensionalAndScanOverride) {
  sample::SampleSpec s;
  s.scan_rows = 4;
  s.scan_cols = 6;
  s.det_rows = s.det_cols = 16;
  s.four_d = true;
  s.dtype = DType::u8;
  const std::string path = test::write_small_sample("s4.h5", s);
  const io::FileInfo fi = io::inspect(path);
  EXPECT_EQ(fi.shape, (Shape4D{4, 6, 16, 16}));
  EXPECT_EQ(fi.scan_shape_source, "dataset dims");
  EXPECT_EQ(fi.bitshuffle_block_elems, 8192u);
  const io::FileInfo given = io::inspect(path, "", 3, 8);
  EXPECT_EQ(given.shape, (Shape4D{3, 8, 16, 16}));
  EXPECT_THROW(io::inspect(path, "", 5, 5), FormatError);
}

TEST(Inspect, PartialWriteIsNotReady) {
  // Only the first scan rows written: a file still being acquired.
  sample::SampleSpec s;
  s.scan_rows = s.scan_cols = 4;
  s.det_rows = s.det_cols = 16;
  const std::string path = test::temp_path("partial.h5");
  sample::write_sample(path, s);
  const io::FileInfo full = io::inspect(path);
  EXPECT_TRUE(full.ready);
  // Build a file whose dataset has more frames than were written.
  hid_t f = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  hsize_t dims[3] = {16, 16, 16}, chunk[3] = {1, 16, 16}, one[3] = {1, 16, 16}, start[3] = {0, 0, 0};
  hid_t sp = H5Screate_simple(3, dims, nullptr);
  hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
  H5Pset_chunk(dcpl, 3, chunk);
  H5Pset_alloc_time(dcpl, H5D_ALLOC_TIME_INCR);
  hid_t ds = H5Dcreate2(f, "/data", H5T_STD_U16LE, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
  std::vector<std::uint16_t> frame(256, 3);
  hid_t ms = H5Screate_simple(3, one, nullptr);
  H5Sselect_hyperslab(sp, H5S_SELECT_SET, start, nullptr, one, nullptr);
  H5Dwrite(ds, H5T_NATIVE_UINT16, ms, sp, H5P_DEFAULT, frame.data());
  H5Sclose(ms);
  H5Dclose(ds);
  H5Pclose(dcpl);
  H5Sclose(sp);
  H5Fclose(f);
  const io::FileInfo part = io::inspect(path);
  EXPECT_EQ(part.dataset_path, "/data");
  EXPECT_EQ(part.chunks_expected, 16u);
  EXPECT_EQ(part.chunks_written, 1u);
  EXPECT_FALSE(part.ready);
}

TEST(Inspect, DiscoverListsCandidates) {
  sample::SampleSpec s;
  s.scan_rows = s.scan_cols = 2;
  s.det_rows = s.det_cols = 16;
  const std::string path = test::write_small_sample("d.h5", s);
  const auto found = io::discover(path);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0], "/entry/data/data");
}
