// SSB on the H200: warm reconstruction, preview and a 200-trial fit on the benchmark file.
// usage: bench_ssb FILE [scan det dtype]
#include <cuda_runtime.h>

#include <cstdio>

#include "bench_dataset.hpp"
#include "io/hdf5/load.hpp"
#include "ssb/ssb.hpp"
#include "bench_guard.hpp"

using namespace qgpu;

static int bench_main(int argc, char** argv) {
  const Dataset ds = bench::load_benchmark_dataset(argc, argv, "bench_ssb");
  const Shape4D& s = ds.shape();
  char shape[128];
  std::snprintf(shape, sizeof(shape), "%zux%zux%zux%zu %s", s.scan_rows, s.scan_cols, s.det_rows, s.det_cols,
                dtype_name(ds.dtype()).c_str());
  ssb::SsbParams p = ssb::params_from_metadata(ds);
  p.disk_center = std::pair<double, double>{s.det_rows / 2.0, s.det_cols / 2.0};
  std::size_t free0 = 0, total = 0;
  cudaMemGetInfo(&free0, &total);
  ssb::SsbResult r = ssb::reconstruct(ds, p);  // warm-up: context, cuFFT plans
  std::vector<double> t;
  for (int i = 0; i < 3; ++i) {
    const double t0 = bench::now_s();
    r = ssb::reconstruct(ds, p);
    t.push_back(bench::now_s() - t0);
  }
  std::printf("| SSB reconstruct (cuda, full BF disk), median of 3 warm | %s | %.1f ms | - | engine %s |\n", shape,
              bench::median(t) * 1e3, r.provenance.parameters.value("engine", nlohmann::json()).dump().c_str());
  std::printf("GPU memory: %.2f GB free before of %.2f GB; dataset %.2f GB resident\n", free0 / 1e9, total / 1e9,
              ds.nbytes() / 1e9);
  for (std::size_t bin : {std::size_t(4), std::size_t(8)}) {
    ssb::preview(ds, p, bin);
    const double t0 = bench::now_s();
    ssb::preview(ds, p, bin);
    std::printf("| SSB preview (cuda, detector bin %zu) | %s | %.1f ms | - | warm, one call |\n", bin, shape,
                (bench::now_s() - t0) * 1e3);
  }
  ssb::FitOptions fo;
  fo.trials = 200;
  fo.detector_bin = 4;
  const double t0 = bench::now_s();
  const ssb::FitResult f = ssb::fit(ds, p, fo);
  const double tf = bench::now_s() - t0;
  std::printf("| SSB fit (cuda, %zu trials, detector bin 4, C1 in [-500, 500]) | %s | %.1f ms | - | C1 = %.2f A, "
              "true %.1f A; %.2f ms per trial incl. G precompute |\n",
              f.loss_trace.size(), shape, tf * 1e3, f.aberrations.C1,
              ds.metadata()["calibration"].value("defocus_angstrom", 0.0), tf * 1e3 / double(f.loss_trace.size()));
  return 0;
}

QGPU_BENCH_MAIN("usage: bench_ssb FILE [scan det dtype]")
