// Public queries end to end (host timer around the API call, result copied back; median of 10 after 2 warm-ups) on
// the same file loaded dense and encoded in one run: BF, ADF, mean pattern, CoM, one frame, a 64x64 scan region.
// usage: bench_queries FILE [--backend cuda|cpu|vulkan]
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <utility>

#include "bench_common.hpp"
#include "core/result_memory.hpp"
#include "detector/virtual_detector.hpp"
#include "dpc/com.hpp"
#include "io/hdf5/load.hpp"
#include "bench_guard.hpp"

using namespace qgpu;

namespace {

double median_ms(const std::function<void()>& f) { return bench::host_median_ms(f, 2, 10); }

}  // namespace

static int bench_main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: bench_queries FILE [--backend cuda|cpu|vulkan]\n");
    return 2;
  }
  std::string backend = "cuda";
  for (int i = 2; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], "--backend") == 0) backend = argv[i + 1];
  std::printf("| query | representation | resident GB | time | check |\n| --- | --- | --- | --- | --- |\n");
  std::vector<std::uint64_t> bf_ref, adf_ref;
  for (const char* rep : {"dense", "encoded"}) try {
    io::LoadOptions o;
    o.backend = backend;
    o.representation = rep;
    const double t0 = bench::now_s();
    const Dataset ds = io::load(argv[1], o);
    const double load_s = bench::now_s() - t0;
    const double gb = double(ds.resident_bytes()) / 1e9;
    std::printf("| load | %s | %.3f | %.1f ms | dense %.3f GB, %.1fx smaller |\n", rep, gb, load_s * 1e3,
                double(ds.dense_bytes()) / 1e9, double(ds.dense_bytes()) / double(ds.resident_bytes()));
    const detector::DiskFit fit = detector::fit_bf_disk(ds);
    const detector::Center c{fit.center_row, fit.center_col};
    Image<std::uint64_t> bf, adf;
    const double bf_ms = median_ms([&] { bf = detector::bf(ds, fit.radius, c); });
    const double adf_ms = median_ms([&] { adf = detector::adf(ds, 1.2 * fit.radius, 3 * fit.radius, c); });
    if (bf_ref.empty()) {
      bf_ref = bf.data;
      adf_ref = adf.data;
    }
    std::printf("| BF (fitted disk r=%.1f) | %s | %.3f | %.3f ms | %s |\n", fit.radius, rep, gb, bf_ms,
                bf.data == bf_ref ? "equal to dense" : "DIFFERS");
    std::printf("| ADF 1.2R..3R | %s | %.3f | %.3f ms | %s |\n", rep, gb, adf_ms,
                adf.data == adf_ref ? "equal to dense" : "DIFFERS");
    std::printf("| mean pattern | %s | %.3f | %.3f ms | |\n", rep, gb, median_ms([&] { detector::mean_pattern(ds); }));
    std::printf("| CoM (both maps) | %s | %.3f | %.3f ms | |\n", rep, gb, median_ms([&] { dpc::center_of_mass(ds); }));
    const Shape4D& s = ds.shape();
    std::printf("| one frame | %s | %.3f | %.3f ms | |\n", rep, gb,
                median_ms([&] { ds.read({s.scan_rows / 2, s.scan_cols / 2, 1, 1}); }));
    const std::size_t side = std::min<std::size_t>(64, std::min(s.scan_rows, s.scan_cols));
    std::printf("| %zux%zu scan region, full frames | %s | %.3f | %.3f ms | |\n", side, side, rep, gb,
                median_ms([&] { ds.read({0, 0, side, side}); }));
    if (backend == "cuda") {  // the download's knobs (device_buffer.cu): copy threads, threads faulting ahead
      const HostBytes want = ds.read({0, 0, side, side}).bytes;
      const std::pair<const char*, const char*> knobs[] = {{"16", "0"}, {"8", "4"}, {"8", "8"}, {"12", "4"}};
      for (const auto& [threads, populate] : knobs) {
        setenv("QGPU_READ_THREADS", threads, 1);
        setenv("QGPU_READ_POPULATE", populate, 1);
        HostBytes got;  // (the previous answer is freed inside the timed call, as the row above frees its own)
        const double ms = median_ms([&] { got = ds.read({0, 0, side, side}).bytes; });
        const bool same = got == want;
        std::printf("| %zux%zu scan region, full frames, QGPU_READ_THREADS=%s QGPU_READ_POPULATE=%s | %s | %.3f | "
                    "%.3f ms | %s |\n", side, side, threads, populate, rep, gb, ms, same ? "same bytes" : "DIFFERS");
      }
      unsetenv("QGPU_READ_THREADS");
      unsetenv("QGPU_READ_POPULATE");
    }
    {  // as Python's ds[...] reads: into the memory a freed answer of that size gave back (core/result_memory.hpp)
      const std::size_t n = side * side * s.frame_pixels();
      const double ms = dispatch_stored_dtype(ds.dtype(), [&](auto z) {
        using T = decltype(z);
        return median_ms([&] {
          std::vector<T> v = result_vector<T>(n);
          ds.read_into({0, 0, side, side}, {}, v.data(), n * sizeof(T));
          recycle_result(std::move(v));  // (the array freed)
        });
      });
      std::printf("| %zux%zu scan region into the memory of the previous answer (Python's ds[...]) | %s | %.3f | "
                  "%.3f ms | |\n", side, side, rep, gb, ms);
    }
    {  // the same into one buffer reused: the copy without the first touch of fresh host memory
      HostBytes buf(side * side * s.frame_pixels() * dtype_size(ds.dtype()));
      const double ms = median_ms([&] { ds.read_into({0, 0, side, side}, {}, buf.data(), buf.size()); });
      std::printf("| %zux%zu scan region into a reused buffer | %s | %.3f | %.3f ms | %.1f GB/s |\n", side, side, rep,
                  gb, ms, double(buf.size()) / 1e6 / ms);
    }
    std::fflush(stdout);
  } catch (const std::exception& e) {  // e.g. vulkan holds no encoded resident: the rows it has, then the reason
    std::printf("| %s on %s | | | not run: %s | |\n", rep, backend.c_str(), e.what());
  }
  return 0;
}

QGPU_BENCH_MAIN("usage: bench_queries FILE [--backend cuda|cpu|vulkan]")
