// The HDF5 metadata parse in a child process (io/hdf5/isolated_parse.hpp): inputs that crash HDF5 1.10.8 itself
// (tests/fuzz/known_hdf5_crashes/) give a FormatError naming the file and the signal through inspect and load; a
// parse that hangs gives a timeout error; a file inspected once is not parsed again until it changes (its FileInfo
// kept: tests/io/test_inspect_child.cpp).
#include <gtest/gtest.h>
#include <hdf5.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "io/hdf5/file_info.hpp"
#include "io/hdf5/isolated_parse.hpp"
#include "io/hdf5/load.hpp"
#include "support/expect_error.hpp"
#include "support/temp_files.hpp"

using namespace qgpu;
using qgpu::test::expect_error;
namespace fs = std::filesystem;

namespace {

std::vector<std::string> known_crash_inputs() {
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(fs::path(QGPU_SOURCE_DIR) / "tests/fuzz/known_hdf5_crashes"))
    if (e.path().extension() == ".h5") files.push_back(e.path().string());
  return files;
}

// A valid (4, 8, 8) uint8 dataset /data, values i % 251.
std::string small_file(const std::string& name) {
  const std::string path = test::temp_path(name);
  hid_t f = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  const hsize_t dims[3] = {4, 8, 8};
  hid_t sp = H5Screate_simple(3, dims, nullptr);
  hid_t d = H5Dcreate2(f, "/data", H5T_STD_U8LE, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  std::vector<std::uint8_t> v(4 * 8 * 8);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = std::uint8_t(i % 251);
  H5Dwrite(d, H5T_NATIVE_UINT8, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data());
  H5Dclose(d);
  H5Sclose(sp);
  H5Fclose(f);
  return path;
}

struct IsolatedParse : ::testing::Test {
  void SetUp() override {
    io::testing::reset_parse_isolation();
    io::testing::forget_inspected_files();
  }
  void TearDown() override {
    io::testing::reset_parse_isolation();
    io::testing::forget_inspected_files();
  }
};

}  // namespace

TEST_F(IsolatedParse, KnownHdf5CrashesAreFormatErrorsThroughInspectAndLoad) {
  const auto files = known_crash_inputs();
  ASSERT_EQ(files.size(), 3u) << "tests/fuzz/known_hdf5_crashes holds three inputs today";
  for (const std::string& f : files) {
    SCOPED_TRACE(f);
    expect_error<FormatError>([&] { io::inspect(f); }, {"HDF5 library crashed parsing '" + f + "'", "signal 11"});
    io::LoadOptions o;
    o.backend = "cpu";
    expect_error<FormatError>([&] { io::load(f, o); }, {"HDF5 library crashed parsing", "SIGSEGV"});
    // Twice: a crash is never remembered as validated.
    expect_error<FormatError>([&] { io::inspect(f); }, {"HDF5 library crashed parsing"});
  }
}

TEST_F(IsolatedParse, HangingParseIsATimeoutError) {
  const std::string path = small_file("hang.h5");
  io::testing::simulate_parse_hang(true);
  io::testing::set_parse_timeout_seconds(0.3);
  expect_error<FormatError>([&] { io::inspect(path); },
                            {"HDF5 library did not finish parsing the metadata of '" + path + "'", "within 0.3 s"});
}

TEST_F(IsolatedParse, ValidatedFileSkipsTheChildUntilItChanges) {
  const std::string path = small_file("validated.h5");
  const io::FileInfo first = io::inspect(path);
  EXPECT_EQ(first.shape.frames(), 4u);
  // The child would hang now: a validated file does not start it.
  io::testing::simulate_parse_hang(true);
  io::testing::set_parse_timeout_seconds(0.3);
  const io::FileInfo again = io::inspect(path);
  EXPECT_EQ(again.shape.det_rows, 8u);
  EXPECT_EQ(again.dims, (std::vector<std::size_t>{4, 8, 8}));
  // Another dataset path is another parse: checked in the child.
  expect_error<FormatError>([&] { io::inspect(path, "/data2"); }, {"did not finish"});
  // A rewritten file is checked again.
  small_file("validated.h5");
  fs::last_write_time(path, fs::last_write_time(path) + std::chrono::seconds(5));
  expect_error<FormatError>([&] { io::inspect(path); }, {"did not finish"});
}

TEST_F(IsolatedParse, TypedErrorsInsideTheChildKeepTheirType) {
  const std::string path = small_file("typed.h5");
  expect_error<IoError>([&] { io::inspect(path, "/missing"); }, {"dataset '/missing' not found"});
  expect_error<IoError>([&] { io::inspect(test::temp_path("absent.h5")); }, {"file not found"});
}
