// Parallax (tilt-corrected bright field) on the H200: warm full runs (align + fit + 2x upsampled image) and
// fit-only runs on the benchmark file, dense and encoded residents; QGPU_BENCH_CPU=1 also times the CPU reference
// (minutes at 512x512 scans). usage: bench_parallax FILE [scan det dtype]
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "bench_dataset.hpp"
#include "parallax/parallax.hpp"
#include "bench_guard.hpp"

using namespace qgpu;

namespace {

double median_of(int reps, const std::function<void()>& f) {
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    const double t0 = bench::now_s();
    f();
    cudaDeviceSynchronize();
    t.push_back(bench::now_s() - t0);
  }
  return bench::median(t);
}

void report(const char* name, const std::string& shape, double seconds, const parallax::ParallaxResult& r) {
  std::printf("| %s | %s | %.1f ms | - | %zu groups (bin %zu), C1 = %.2f A, rotation %.2f deg, confidence %.3f |\n",
              name, shape.c_str(), seconds * 1e3, r.det_row.size(),
              r.provenance.parameters.at("detector_bin").get<std::size_t>(), r.fit.C1, r.fit.rotation_deg,
              r.fit.confidence);
  std::fflush(stdout);
}

}  // namespace

static int bench_main(int argc, char** argv) {
  const Dataset ds = bench::load_benchmark_dataset(argc, argv, "bench_parallax");
  const Shape4D& s = ds.shape();
  char shape[128];
  std::snprintf(shape, sizeof(shape), "%zux%zux%zux%zu %s", s.scan_rows, s.scan_cols, s.det_rows, s.det_cols,
                dtype_name(ds.dtype()).c_str());
  const parallax::ParallaxParams p = parallax::params_from_metadata(ds);
  std::printf("true C1 of the file: %.1f A (0: the timing is what counts, the fit sees no parallax)\n",
              ds.metadata()["calibration"].value("defocus_angstrom", 0.0));
  std::size_t free0 = 0, total = 0;
  cudaMemGetInfo(&free0, &total);
  parallax::ParallaxResult r = parallax::run(ds, p);  // warm-up: context, cuFFT plans
  report("parallax run (cuda dense, 2x upsampled), median of 3 warm", shape,
         median_of(3, [&] { r = parallax::run(ds, p); }), r);
  report("parallax fit only (cuda dense), median of 3 warm", shape,
         median_of(3, [&] { r = parallax::fit_only(ds, p); }), r);
  std::printf("GPU memory: %.2f GB free before of %.2f GB; dataset %.2f GB resident; engine %s\n", free0 / 1e9,
              total / 1e9, ds.nbytes() / 1e9, r.provenance.parameters.at("engine").dump().c_str());
  {
    const Dataset enc = ds.to_encoded();
    parallax::run(enc, p);
    report("parallax run (cuda encoded), median of 3 warm", shape, median_of(3, [&] { r = parallax::run(enc, p); }),
           r);
  }
  if (const char* cpu = std::getenv("QGPU_BENCH_CPU"); cpu && std::string(cpu) == "1") {
    const Dataset host = ds.to_host();
    report("parallax run (cpu reference), one call", shape, median_of(1, [&] { r = parallax::run(host, p); }), r);
  }
  return 0;
}

QGPU_BENCH_MAIN("usage: bench_parallax FILE [scan det dtype]")
