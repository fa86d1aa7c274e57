// Bad input gets a clear error naming the problem, never a crash or wrong data.
#include <gtest/gtest.h>

#include <fstream>
#include <vector>

#include "support/expect_error.hpp"
#include "corrupt.hpp"
#include "io/hdf5/load.hpp"
#include "support/temp_files.hpp"

using namespace qgpu;
using qgpu::test::expect_error;

namespace {

sample::SampleSpec small() {
  sample::SampleSpec s;
  s.scan_rows = 4;
  s.scan_cols = 4;
  s.det_rows = s.det_cols = 32;
  return s;
}

io::LoadOptions cpu() {
  io::LoadOptions o;
  o.backend = "cpu";
  return o;
}

void write_typed_dataset(const std::string& path, hid_t type) {
  hid_t f = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  hsize_t dims[3] = {4, 8, 8};
  hid_t sp = H5Screate_simple(3, dims, nullptr);
  hid_t d = H5Dcreate2(f, "/data", type, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  const std::vector<unsigned char> zeros(4 * 8 * 8 * H5Tget_size(type), 0);  // the data written: the file is ready
  H5Dwrite(d, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, zeros.data());
  H5Dclose(d);
  H5Sclose(sp);
  H5Fclose(f);
}

}  // namespace

TEST(LoadErrors, MissingFile) {
  expect_error<IoError>([] { io::load("/nonexistent/x.h5", cpu()); }, {"file not found", "/nonexistent/x.h5"});
}

TEST(LoadErrors, NotAnHdf5File) {
  const std::string path = test::temp_path("text.h5");
  std::ofstream(path) << "plain text";
  expect_error<IoError>([&] { io::load(path, cpu()); }, {"not an HDF5 file", path});
}

TEST(LoadErrors, WrongDatasetPath) {
  const std::string path = test::write_small_sample("s.h5", small());
  io::LoadOptions o = cpu();
  o.dataset_path = "/entry/data/nothing";
  expect_error<IoError>([&] { io::load(path, o); }, {"/entry/data/nothing", "not found"});
  o.dataset_path = "/entry/data";  // a group, not a dataset
  expect_error<IoError>([&] { io::load(path, o); }, {"/entry/data", "not a dataset"});
}

TEST(LoadErrors, WrongDtype) {
  io::LoadOptions o = cpu();
  o.dataset_path = "/data";
  const std::string pstr = test::temp_path("string.h5");
  write_typed_dataset(pstr, H5T_C_S1);
  expect_error<DTypeError>([&] { io::load(pstr, o); }, {"/data", "neither integers nor floats"});
  const std::string p64 = test::temp_path("u64.h5");
  write_typed_dataset(p64, H5T_STD_U64LE);
  expect_error<DTypeError>([&] { io::load(p64, o); }, {"64-bit"});
  const std::string pi64 = test::temp_path("i64.h5");
  write_typed_dataset(pi64, H5T_STD_I64BE);
  expect_error<DTypeError>([&] { io::load(pi64, o); }, {"64-bit"});
  // signed integers and IEEE floats load (float64 as float32), dense
  for (const auto& [type, want] : {std::pair{H5T_STD_I16LE, DType::i16}, std::pair{H5T_IEEE_F32BE, DType::f32},
                                   std::pair{H5T_IEEE_F64LE, DType::f32}, std::pair{H5T_STD_I8LE, DType::i8}}) {
    const std::string p = test::temp_path("typed.h5");
    write_typed_dataset(p, type);
    const Dataset ds = io::load(p, o);
    EXPECT_EQ(ds.dtype(), want);
    EXPECT_EQ(ds.representation(), "dense");
    EXPECT_EQ(ds.shape().frames(), 4u);
  }
}

TEST(LoadErrors, RegionsOutOfBounds) {
  const std::string path = test::write_small_sample("s.h5", small());
  io::LoadOptions o = cpu();
  o.scan_region = {2, 0, 3, 4};
  expect_error<RegionError>([&] { io::load(path, o); }, {"scan region", "out of bounds", "4x4"});
  o.scan_region = {};
  o.detector_region = {0, 0, 0, 5};
  expect_error<RegionError>([&] { io::load(path, o); }, {"detector region", "empty"});
  o.detector_region = {30, 30, 4, 4};
  expect_error<RegionError>([&] { io::load(path, o); }, {"detector region", "out of bounds"});
  o.detector_region = {};
  o.bin_detector = 5;
  expect_error<RegionError>([&] { io::load(path, o); }, {"not divisible by bin 5"});
  o.bin_detector = 0;
  expect_error<RegionError>([&] { io::load(path, o); }, {"at least 1"});
}

TEST(LoadErrors, Backends) {
  const std::string path = test::write_small_sample("s.h5", small());
  io::LoadOptions o;
  o.backend = "tpu";
  expect_error<InvalidArgument>([&] { io::load(path, o); }, {"unknown backend 'tpu'"});
  if (!detect().cuda_available) {
    o.backend = "cuda";
    expect_error<BackendUnavailable>([&] { io::load(path, o); }, {"needs a usable CUDA GPU", "backend='cpu'"});
    o.backend = "auto";  // never a silent fallback to the CPU
    expect_error<BackendUnavailable>([&] { io::load(path, o); }, {"'auto'"});
  } else {
    o.backend = "auto";
    EXPECT_EQ(io::load(path, o).backend(), Backend::cuda);
  }
}

TEST(LoadErrors, CorruptChunksOnCpu) {
  for (test::Damage d : {test::Damage::header_size, test::Damage::truncated, test::Damage::garbage,
                         test::Damage::block_length}) {
    const std::string path = test::write_small_sample("c" + std::to_string(int(d)) + ".h5", small());
    test::rewrite_chunk(path, 9, [&](auto& b) { test::damage(b, d); });
    expect_error<FormatError>([&] { io::load(path, cpu()); }, {"cannot decode", "frame 9 ("});
    io::LoadOptions ref = cpu();
    ref.decoder = "hdf5";  // checked by our codec before the HDF5 filter pipeline is given the chunk (issue 25)
    expect_error<FormatError>([&] { io::load(path, ref); }, {"chunk 9 is damaged ("});
  }
}

TEST(LoadErrors, TruncatedFile) {
  const std::string path = test::write_small_sample("t.h5", small());
  std::filesystem::resize_file(path, std::filesystem::file_size(path) / 2);
  EXPECT_THROW(io::load(path, cpu()), IoError);
}
