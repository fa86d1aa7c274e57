#pragma once
// A small simulated sample, loaded on the CPU backend, and its product cache.
#include <hdf5.h>

#include <string>

#include "cache/cache.hpp"
#include "io/hdf5/load.hpp"
#include "support/temp_files.hpp"

namespace qgpu::test {

inline sample::SampleSpec small_cache_spec() {
  sample::SampleSpec s;
  s.scan_rows = 12;
  s.scan_cols = 10;
  s.det_rows = s.det_cols = 48;
  s.threads = 2;
  return s;
}

inline Dataset load_cpu(const std::string& path) {
  io::LoadOptions o;
  o.backend = "cpu";
  return io::load(path, o);
}

// Removes an object (dataset or group) from a file with the HDF5 library: a cache written without that field.
inline void remove_object(const std::string& file, const std::string& object) {
  const hid_t f = H5Fopen(file.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  ASSERT_GE(f, 0);
  EXPECT_GE(H5Ldelete(f, object.c_str(), H5P_DEFAULT), 0);
  H5Fclose(f);
}

}  // namespace qgpu::test
