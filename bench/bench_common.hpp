#pragma once
// Shared helpers of the benchmarks: timing, the benchmark sample file, result lines.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "core/stage_timing.hpp"
#include "io/sample/sample.hpp"

namespace qgpu::bench {

inline constexpr double kHbmBytesPerSecond = 4.8e12;  // H200 HBM3e datasheet

inline double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

// Median wall time in ms of `reps` calls of f after `warmups` calls (host timer: for public calls whose results
// are on the host when they return).
template <class F> double host_median_ms(F&& f, int warmups, int reps) {
  for (int i = 0; i < warmups; ++i) f();
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    const double t0 = now_s();
    f();
    t.push_back((now_s() - t0) * 1e3);
  }
  return median(t);
}

// "name median ms, ..., total median ms" of the library's stages (core/stage_timing.hpp) over `reps` calls of f.
template <class F> std::string stage_medians(F&& f, int reps) {
  std::vector<std::string> names;
  std::vector<std::vector<double>> ms;
  std::vector<double> total;
  for (int i = 0; i < reps; ++i) {
    timing::Recording rec;
    f();
    total.push_back(rec.elapsed_ms());
    for (const auto& [name, t] : rec.stages()) {
      const auto it = std::find(names.begin(), names.end(), name);
      const std::size_t k = std::size_t(it - names.begin());
      if (it == names.end()) {
        names.push_back(name);
        ms.emplace_back();
      }
      ms[k].push_back(t);
    }
  }
  std::string out;
  char buf[96];
  for (std::size_t k = 0; k < names.size(); ++k) {
    std::snprintf(buf, sizeof buf, "%s %.3f ms, ", names[k].c_str(), median(ms[k]));
    out += buf;
  }
  std::snprintf(buf, sizeof buf, "total %.3f ms (medians of %d)", median(total), reps);
  return out + buf;
}

// The benchmark dataset: written once (simulated, bitshuffle+LZ4 through the HDF5 plugin) and reused.
inline std::string ensure_sample(const std::string& path, std::size_t scan, std::size_t det, DType dtype) {
  if (std::filesystem::exists(path)) return path;
  sample::SampleSpec s;
  s.scan_rows = s.scan_cols = scan;
  s.det_rows = s.det_cols = det;
  s.dtype = dtype;
  const double t0 = now_s();
  std::fprintf(stderr, "writing %s (%zux%zu scan, %zux%zu detector, %s)\n", path.c_str(), scan, scan, det, det,
               dtype_name(dtype).c_str());
  sample::write_sample(path, s);
  const double secs = now_s() - t0, dense = double(scan) * scan * det * det * dtype_size(dtype),
               disk = double(std::filesystem::file_size(path));
  std::fprintf(stderr, "written in %.1f s, %.2f GB on disk: %.2f GB/s of counts simulated, compressed and written "
               "(%.2f GB/s to disk)\n", secs, disk / 1e9, dense / secs / 1e9, disk / secs / 1e9);
  return path;
}

// One result line: "| name | shape | time | GB/s | note |" for the ledger, also easy to grep.
inline void row(const std::string& name, const std::string& shape, double seconds, double bytes,
                const std::string& note) {
  std::printf("| %s | %s | %.3f ms | %.1f GB/s | %s |\n", name.c_str(), shape.c_str(), seconds * 1e3,
              bytes / seconds / 1e9, note.c_str());
  std::fflush(stdout);
}

}  // namespace qgpu::bench
