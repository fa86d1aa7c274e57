// Product cache end to end: load (the backend's full pipeline) + every product + the HDF5 write, then opening
// the cache (every product read) and answering one product from it; per-product times from the build's steps.
// usage: bench_cache FILE [scan det] [--backend cuda|cpu] [--out products.h5] [--reps N]
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>

#include "bench_common.hpp"
#include "cache/cache.hpp"
#include "io/hdf5/load.hpp"
#include "bench_guard.hpp"

using namespace qgpu;

static int bench_main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: bench_cache FILE [scan det] [--backend cuda|cpu] [--out products.h5] [--reps N]\n");
    return 2;
  }
  const std::string path = argv[1];
  const bool shape_given = argc > 3 && argv[2][0] != '-';
  const std::size_t scan = shape_given ? std::stoul(argv[2]) : 512, det = shape_given ? std::stoul(argv[3]) : 192;
  std::string backend = "cuda", out = path + ".products.h5";
  int reps = 3;
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], "--backend") == 0) backend = argv[i + 1];
    if (std::strcmp(argv[i], "--out") == 0) out = argv[i + 1];
    if (std::strcmp(argv[i], "--reps") == 0) reps = std::stoi(argv[i + 1]);
  }
  try {
    bench::ensure_sample(path, scan, det, DType::u16);
    std::vector<double> load_t, build_t, total_t, open_t;
    std::map<std::string, double> step_t;
    for (int rep = 0; rep <= reps; ++rep) {  // rep 0 warms the page cache and the CUDA context
      const double t0 = bench::now_s();
      io::LoadOptions lo;
      lo.backend = backend;
      const Dataset ds = io::load(path, lo);
      const double t1 = bench::now_s();
      cache::BuildOptions bo;
      std::string current;
      double step_start = t1;
      std::map<std::string, double> steps;
      bo.on_step = [&](const std::string& s) {
        const double now = bench::now_s();
        if (!current.empty()) steps[current] = now - step_start;
        current = s;
        step_start = now;
      };
      const auto names = cache::build(ds, out, bo);
      const double t2 = bench::now_s();
      steps[current + " + write"] = t2 - step_start;
      const cache::Cache c = cache::open(out);
      const Image<std::uint64_t> bf = c.u64("bf");
      const double t3 = bench::now_s();
      std::fprintf(stderr, "rep %d: load %.3f s, products + write %.3f s, open %.1f ms (%zu products, %.1f MB)\n", rep,
                   t1 - t0, t2 - t1, (t3 - t2) * 1e3, names.size(), double(std::filesystem::file_size(out)) / 1e6);
      if (rep == 0) continue;
      load_t.push_back(t1 - t0);
      build_t.push_back(t2 - t1);
      total_t.push_back(t2 - t0);
      open_t.push_back(t3 - t2);
      for (const auto& [k, v] : steps) step_t[k] += v / reps;
    }
    std::printf("bench_cache %s backend %s, median of %d:\n", path.c_str(), backend.c_str(), reps);
    std::printf("  load                 %8.3f s\n", bench::median(load_t));
    std::printf("  products + write     %8.3f s\n", bench::median(build_t));
    std::printf("  end to end           %8.3f s\n", bench::median(total_t));
    std::printf("  open (all products)  %8.2f ms\n", bench::median(open_t) * 1e3);
    std::printf("  cache file           %8.1f MB\n", double(std::filesystem::file_size(out)) / 1e6);
    for (const auto& [k, v] : step_t) std::printf("    %-22s %8.2f ms (mean)\n", k.c_str(), v * 1e3);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_cache: %s\n", e.what());
    return 1;
  }
  return 0;
}

QGPU_BENCH_MAIN("usage: bench_cache FILE [scan det] [--backend cuda|cpu] [--out products.h5] [--reps N]")
