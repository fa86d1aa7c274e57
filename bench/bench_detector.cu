// Virtual detector kernels on a GPU-resident dataset: time per call (CUDA events, median of 20 after warm-up),
// bytes the kernel must read, and the effective bandwidth against the 4.8 TB/s HBM limit.
// usage: bench_detector FILE [scan det dtype]
#include <cuda_runtime.h>

#include <cstdio>

#include "bench_dataset.hpp"
#include "cuda_timer.hpp"
#include "detector/cuda/masked_sum_cuda.hpp"
#include "detector/virtual_detector.hpp"
#include "device/cuda/cuda_check.hpp"
#include "display/display.hpp"
#include "dpc/com.hpp"
#include "dpc/idpc.hpp"
#include "dpc/rotation.hpp"
#include "io/hdf5/load.hpp"
#include "bench_guard.hpp"

using namespace qgpu;
using qgpu::bench::time_ms;

namespace {

void report(const char* name, const std::string& shape, double ms, double bytes, const std::string& note) {
  char extra[256];
  std::snprintf(extra, sizeof(extra), "%.1f%% of 4.8 TB/s; %s", 100.0 * bytes / (ms * 1e-3) / bench::kHbmBytesPerSecond,
                note.c_str());
  bench::row(name, shape, ms * 1e-3, bytes, extra);
}

}  // namespace

static int bench_main(int argc, char** argv) {
  const Dataset ds = bench::load_benchmark_dataset(argc, argv, "bench_detector");
  const Shape4D& s = ds.shape();
  const std::size_t es = dtype_size(ds.dtype());
  char shape[128];
  std::snprintf(shape, sizeof(shape), "%zux%zux%zux%zu %s", s.scan_rows, s.scan_cols, s.det_rows, s.det_cols,
                dtype_name(ds.dtype()).c_str());
  const double full = double(ds.nbytes());
  DeviceBuffer out(s.frames() * 8);
  auto* d_out = out.as<std::uint64_t>();

  report("frame totals (every pixel, 16-byte loads)", shape,
         time_ms([&] { detector::cuda::compute_frame_totals(ds, d_out); }), full, "reads the whole dataset");

  const detector::DiskFit fit = detector::fit_bf_disk(ds);
  std::printf("BF disk: centre (%.2f, %.2f), radius %.2f px\n", fit.center_row, fit.center_col, fit.radius);
  struct Case {
    const char* name;
    detector::Mask mask;
  };
  std::vector<std::uint32_t> w(s.frame_pixels());
  for (std::size_t i = 0; i < w.size(); ++i) w[i] = std::uint32_t(1 + i % 3);
  const Case cases[] = {
      {"BF disk", detector::disk(s.det_rows, s.det_cols, fit.center_row, fit.center_col, fit.radius)},
      {"ADF annulus 1.2R..edge",
       detector::annulus(s.det_rows, s.det_cols, fit.center_row, fit.center_col, 1.2 * fit.radius, 1e9)},
      {"ADF annulus 1.2R..3R",
       detector::annulus(s.det_rows, s.det_cols, fit.center_row, fit.center_col, 1.2 * fit.radius, 3 * fit.radius)},
      {"integer-weighted mask, every pixel (dense)", detector::from_weights(s.det_rows, s.det_cols, w)},
  };
  detector::cuda::frame_totals(ds);  // cached once per dataset, as in use
  for (const Case& c : cases) {
    const detector::SumPlan plan = detector::plan_masked_sum(c.mask);
    const detector::cuda::DevicePlan dp = detector::cuda::upload(plan);
    const double ms = time_ms([&] { detector::cuda::masked_sum(ds, dp, d_out); });
    const std::size_t touched = plan.strategy == detector::Strategy::dense ? s.frame_pixels() : plan.offsets.size();
    char note[160];
    std::snprintf(note, sizeof(note), "%s, %zu of %zu pixels read per frame; dataset-equivalent %.0f GB/s",
                  detector::strategy_name(plan.strategy).c_str(), touched, s.frame_pixels(), full / (ms * 1e-3) / 1e9);
    report(c.name, shape, ms, double(touched) * es * s.frames(), note);
  }
  const double t0 = bench::now_s();
  const Image<std::uint64_t> bf = detector::bf(ds);
  std::printf("bf() end to end incl. plan, upload, copy back: %.3f ms\n", (bench::now_s() - t0) * 1e3);
  // CoM / DPC chain, end to end per call (host timer, median of 10 after 2 warm-ups; includes copying the maps back).
  auto host_ms = [](auto&& f) {
    for (int i = 0; i < 2; ++i) f();
    std::vector<double> t;
    for (int i = 0; i < 10; ++i) {
      const double t0 = bench::now_s();
      f();
      t.push_back((bench::now_s() - t0) * 1e3);
    }
    return bench::median(t);
  };
  dpc::ComResult com;
  const double com_ms = host_ms([&] { com = dpc::center_of_mass(ds); });
  report("CoM row/col (exact uint64 sums, every pixel)", shape, com_ms, full, "end to end incl. 2 maps copied back");
  const dpc::DpcResult d = dpc::centered_dpc(com);
  dpc::RotationResult rot;
  const double rot_ms = host_ms([&] { rot = dpc::calibrate_rotation(d); });
  std::printf("| rotation calibration (host) | %zux%zu maps | %.3f ms | - | angle %.2f deg, transpose %d |\n",
              s.scan_rows, s.scan_cols, rot_ms, rot.angle_deg, int(rot.transpose));
  auto [gr, gc] = dpc::rotate_field(d, rot.angle_deg, rot.transpose);
  for (Backend b : {Backend::cuda, Backend::cpu}) {
    const double ms = host_ms([&] { dpc::idpc(on_backend(gr, b), on_backend(gc, b)); });
    std::printf("| iDPC %s (mirror padding to %zux%zu) | %zux%zu | %.3f ms | - | end to end incl. transfers |\n",
                backend_name(b).c_str(), 2 * s.scan_rows, 2 * s.scan_cols, s.scan_rows, s.scan_cols, ms);
  }
  Image<float> f;
  f.rows = bf.rows;
  f.cols = bf.cols;
  f.data.assign(bf.data.begin(), bf.data.end());
  display::DisplayOptions look;
  look.lower_percentile = 1;
  look.upper_percentile = 99;
  look.scale = display::Scale::log;
  for (Backend b : {Backend::cuda, Backend::cpu}) {
    const double ms = host_ms([&] { display::render(on_backend(f, b), look); });
    std::printf("| display render %s (log, 1-99%% clip, viridis) | %zux%zu | %.3f ms | - | end to end incl. transfers |\n",
                backend_name(b).c_str(), f.rows, f.cols, ms);
  }
  return 0;
}

QGPU_BENCH_MAIN("usage: bench_detector FILE [scan det dtype]")
