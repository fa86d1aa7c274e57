#pragma once
// Scratch files for tests, under $QGPU_TEST_TMP (set by ctest) or the system temp folder.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "io/sample/sample.hpp"

namespace qgpu::test {

inline std::filesystem::path temp_dir() {
  const char* env = std::getenv("QGPU_TEST_TMP");
  std::filesystem::path d = env ? std::filesystem::path(env) : std::filesystem::temp_directory_path() / "qgpu-test";
  std::filesystem::create_directories(d);
  return d;
}

// A file name unique to the running test.
inline std::string temp_path(const std::string& suffix) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string name = std::string(info->test_suite_name()) + "_" + info->name() + "_" + suffix;
  for (char& ch : name)
    if (ch == '/') ch = '_';
  return (temp_dir() / name).string();
}

// Writes a small simulated sample through the HDF5 bitshuffle plugin and returns its path.
inline std::string write_small_sample(const std::string& suffix, const sample::SampleSpec& spec) {
  const std::string path = temp_path(suffix);
  sample::write_sample(path, spec);
  return path;
}

}  // namespace qgpu::test
