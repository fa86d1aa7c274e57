// qgpu cache FILE -o products.h5: one load, every first-look product written to a versioned HDF5 cache.
#include <chrono>
#include <cstdio>

#include "cache/cache.hpp"
#include "cli/commands.hpp"
#include "cli/load_flags.hpp"
#include "cli/progress.hpp"
#include "core/atomic_output.hpp"
#include "cache/products.hpp"
#include "io/hdf5/load.hpp"
#include "mpi/split_run.hpp"
#include "workflow/scan_products.hpp"

namespace qgpu::cli {

namespace {

struct CacheArgs {
  std::string file, out, backend = "auto", dataset;
  std::vector<double> bf, adf;
  LoadFlags load;
};

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

void run(const CacheArgs& a) {
  if (cache::is_cache_file(a.file))
    throw InvalidArgument("'" + a.file + "' is already a product cache: give the raw data file");
  if (a.adf.size() % 2 != 0) throw InvalidArgument("--adf takes pairs of radii INNER OUTER");
  io::LoadOptions lo = load_options(a.backend, a.dataset, a.load);
  cache::BuildOptions bo;
  bo.bf_radii = a.bf;
  for (std::size_t i = 0; i + 1 < a.adf.size(); i += 2) bo.adf_ranges.push_back({a.adf[i], a.adf[i + 1]});
  cache::check_extra_detectors(bo);  // before any loading
  check_output_path(a.out, "-o/--out: cache output");  // never a device node, FIFO or folder
  // The cache workflow, written once: one process passes its Dataset, an MPI run its gathered row slabs.
  std::string load_time;  // one process: how long the load took (an MPI run lists each rank's)
  const auto pipeline = [&](workflow::ScanProducts& src) {
    std::printf("%s%s\n", src.summary().c_str(), load_time.c_str());
    const auto t1 = std::chrono::steady_clock::now();
    const std::vector<std::string> names = cache::build(src, a.out, bo);
    std::printf("wrote %zu products to %s in %.2f s:", names.size(), a.out.c_str(), seconds_since(t1));
    for (const std::string& n : names) std::printf(" %s", n.c_str());
    std::printf("\n");
  };
  if (mpi::launched_with_ranks()) return mpi::run_split(a.file, lo, pipeline);
  const auto t0 = std::chrono::steady_clock::now();
  workflow::DatasetProducts src(io::load(a.file, lo));
  end_progress_line();
  char buf[64];
  std::snprintf(buf, sizeof buf, " in %.2f s", seconds_since(t0));
  load_time = buf;
  pipeline(src);
}

}  // namespace

void add_cache(CLI::App& app) {
  auto* cmd = app.add_subcommand("cache", "Compute the first-look products from one load into an HDF5 cache");
  auto a = std::make_shared<CacheArgs>();
  cmd->add_option("-o,--out", a->out, "cache file to write (e.g. products.h5)")->required();
  add_input_flags(cmd, a->file, a->backend, a->dataset, a->load);
  cmd->add_option("--bf", a->bf, "extra bright-field radii (pixels), besides the fitted disk radius");
  cmd->add_option("--adf", a->adf, "extra annuli: INNER OUTER [INNER OUTER ...] (pixels)");
  cmd->callback([a] { run(*a); });
}

}  // namespace qgpu::cli
