#pragma once
// A small simulated sample loaded on the CPU, and helpers for the movie tests.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "io/hdf5/load.hpp"
#include "movie/movie.hpp"
#include "support/temp_files.hpp"

namespace qgpu::test {

// 12 x 14 scan of 32 x 32 frames with the sample's calibration (SSB works on it); written once per process, to a
// file of its own (ctest runs each test as a process, in parallel).
inline const Dataset& movie_sample() {
  static const Dataset ds = [] {
    sample::SampleSpec spec;
    spec.scan_rows = 12;
    spec.scan_cols = 14;
    spec.det_rows = spec.det_cols = 32;
    const std::string path = (temp_dir() / ("movie_sample_" + std::to_string(::getpid()) + ".h5")).string();
    sample::write_sample(path, spec);
    io::LoadOptions o;
    o.backend = "cpu";
    Dataset ds = io::load(path, o);
    std::filesystem::remove(path);  // host-resident now
    return ds;
  }();
  return ds;
}

inline std::vector<movie::Frame> all_frames(const Dataset& ds, const movie::MovieSpec& s) {
  std::vector<movie::Frame> out;
  movie::render_frames(ds, s, [&](const movie::Frame& f) { out.push_back(f); });
  return out;
}

// stdout of a shell command and its exit status.
inline std::string run_command(const std::string& cmd, int* status = nullptr) {
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return out;
  char buf[4096];
  std::size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  const int st = pclose(p);
  if (status) *status = st;
  return out;
}

}  // namespace qgpu::test
