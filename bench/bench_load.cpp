// Load throughput on one file, every path in one run: the CUDA pipeline (parallel coalesced preads, pinned copies,
// GPU bitshuffle+LZ4 decode) with its stage timings, the same with one read thread, our host decoder on all cores,
// and the HDF5 C API + bitshuffle plugin reference (one thread, on a band of scan rows to keep the run short); the
// encoded load also with the other stream priorities (QGPU_ENCODER_PRIORITY), and per-batch timelines of a dense and
// an encoded load on stderr (QGPU_LOAD_TIMELINE).
// usage: bench_load FILE [scan det dtype] [--skip-cpu] [--reference-rows N] [--direct] [--write-only]
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "bench_common.hpp"
#include "io/hdf5/load.hpp"
#include "bench_guard.hpp"

using namespace qgpu;

namespace {

std::string stages(const Dataset& ds) {
  const auto& t = ds.provenance().parameters.at("timing");
  char s[256];
  std::snprintf(s, sizeof(s), "index %.1f ms, setup %.1f ms, read %.1f ms (%d threads), copy %.1f ms, decode %.1f ms, "
                "wait %.1f ms, %d batches", t.value("index_s", 0.0) * 1e3, t.value("setup_s", 0.0) * 1e3,
                t.value("read_s", 0.0) * 1e3, t.value("read_threads", 0),
                t.value("copy_s", 0.0) * 1e3, t.value("decode_s", 0.0) * 1e3, t.value("wait_s", 0.0) * 1e3,
                t.value("batches", 0));
  return s;
}

// Median of `reps` warm loads (one more first, to warm the page cache and the CUDA context).
double timed_load(const std::string& path, const io::LoadOptions& o, int reps, std::string* detail) {
  std::vector<double> times;
  for (int rep = 0; rep <= reps; ++rep) {
    const double tp = bench::now_s();
    (void)io::plan_load(path, o);  // what the load's own plan costs (the inspect cached after the first)
    const double plan = bench::now_s() - tp;
    const double t0 = bench::now_s();
    Dataset ds = io::load(path, o);
    const double t = bench::now_s() - t0;
    if (rep > 0) times.push_back(t);
    // outside: the load's wall time less its pipeline's total (plan, admission, the dataset made, destructors)
    const double total = ds.provenance().parameters.at("timing").value("total_s", 0.0);
    std::fprintf(stderr, "%s load %d: %.3f s  %s; outside the pipeline %.2f ms (a plan alone %.2f ms)\n",
                 o.backend.c_str(), rep, t, stages(ds).c_str(), (t - total) * 1e3, plan * 1e3);
    if (detail) *detail = stages(ds);
  }
  return bench::median(times);
}

}  // namespace

static int bench_main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: bench_load FILE [scan det dtype] [--skip-cpu] [--reference-rows N] [--direct] [--write-only]\n");
    return 2;
  }
  const std::string path = argv[1];
  const bool shape_given = argc > 4 && argv[2][0] != '-';
  const std::size_t scan = shape_given ? std::stoul(argv[2]) : 512, det = shape_given ? std::stoul(argv[3]) : 192;
  const DType dtype = shape_given ? dtype_from_name(argv[4]) : DType::u16;
  bool skip_cpu = false, direct = false, write_only = false;
  std::size_t reference_rows = 32;
  for (int i = 1; i < argc; ++i) {
    skip_cpu = skip_cpu || std::strcmp(argv[i], "--skip-cpu") == 0;
    direct = direct || std::strcmp(argv[i], "--direct") == 0;
    write_only = write_only || std::strcmp(argv[i], "--write-only") == 0;
    if (std::strcmp(argv[i], "--reference-rows") == 0 && i + 1 < argc) reference_rows = std::stoul(argv[i + 1]);
  }
  bench::ensure_sample(path, scan, det, dtype);
  if (write_only) return 0;
  const io::FileInfo fi = io::inspect(path);
  const double decoded = double(fi.shape.elements() * dtype_size(fi.dtype));
  const double on_disk = double(std::filesystem::file_size(path));
  char shape[128];
  std::snprintf(shape, sizeof(shape), "%zux%zux%zux%zu %s", fi.shape.scan_rows, fi.shape.scan_cols,
                fi.shape.det_rows, fi.shape.det_cols, dtype_name(fi.dtype).c_str());
  std::printf("file %s: %.2f GB decoded, %.2f GB on disk (ratio %.2f)\n", path.c_str(), decoded / 1e9, on_disk / 1e9,
              decoded / on_disk);

  io::LoadOptions cuda;
  cuda.backend = "cuda";
  std::string detail;
  double t = timed_load(path, cuda, 5, &detail);
  bench::row("load cuda (parallel coalesced preads + GPU decode), median of 5 warm", shape, t, decoded,
             "page cache warm; GB/s of decoded data; " + detail);
  // Each load above takes the memory its predecessor released (device/cuda/buffer_pool.hpp resident_buffer); without
  // that, the resident's allocation follows the previous dataset's release (the default until 2026-12-06); then the
  // default again: A B A.
  ::setenv("QGPU_KEEP_RESIDENT", "0", 1);
  t = timed_load(path, cuda, 5, &detail);
  bench::row("load cuda, the released resident freed (QGPU_KEEP_RESIDENT=0), median of 5 warm", shape, t, decoded,
             detail);
  ::unsetenv("QGPU_KEEP_RESIDENT");
  t = timed_load(path, cuda, 5, &detail);
  bench::row("load cuda (default) again, median of 5 warm", shape, t, decoded, detail);
  const std::string quarter = std::to_string(io::LoadPlan{}.batch_bytes / 4);  // of the default 64 MiB batches
  io::LoadOptions enc = cuda;
  enc.representation = "encoded";
  t = timed_load(path, enc, 2, &detail);
  bench::row("load cuda into the encoded representation, median of 2 warm", shape, t, decoded, detail);
  // The stream priorities of the encoded load (encode_worker.hpp; default: the encoder's stream first).
  for (const char* mode : {"same", "low"}) {
    ::setenv("QGPU_ENCODER_PRIORITY", mode, 1);
    t = timed_load(path, enc, 2, &detail);
    bench::row(std::string("load cuda into the encoded representation, QGPU_ENCODER_PRIORITY=") + mode +
                   ", median of 2 warm", shape, t, decoded, detail);
  }
  ::unsetenv("QGPU_ENCODER_PRIORITY");
  // One more load of each with the per-batch timeline on stderr (QGPU_LOAD_TIMELINE; not timed above).
  ::setenv("QGPU_LOAD_TIMELINE", "1", 1);
  std::fprintf(stderr, "timeline of a dense load:\n");
  (void)io::load(path, cuda);
  ::setenv("QGPU_FIRST_BATCH_BYTES", quarter.c_str(), 1);
  ::setenv("QGPU_BATCH_GROWTH", "0", 1);
  std::fprintf(stderr, "timeline of a dense load, a quarter first batch then full ones:\n");
  (void)io::load(path, cuda);
  ::unsetenv("QGPU_FIRST_BATCH_BYTES");
  ::unsetenv("QGPU_BATCH_GROWTH");
  std::fprintf(stderr, "timeline of an encoded load:\n");
  (void)io::load(path, enc);
  ::setenv("QGPU_ENCODER_PRIORITY", "same", 1);
  std::fprintf(stderr, "timeline of an encoded load, QGPU_ENCODER_PRIORITY=same:\n");
  (void)io::load(path, enc);
  ::unsetenv("QGPU_ENCODER_PRIORITY");
  ::unsetenv("QGPU_LOAD_TIMELINE");
  io::LoadOptions one = cuda;
  one.read_threads = 1;
  t = timed_load(path, one, 1, &detail);
  bench::row("load cuda, one read thread", shape, t, decoded, detail);
  if (direct) {
    io::LoadOptions d = cuda;
    d.direct_io = true;
    t = timed_load(path, d, 1, &detail);
    bench::row("load cuda, O_DIRECT reads", shape, t, decoded, detail);
  }
  if (!skip_cpu) {
    io::LoadOptions ours;
    ours.backend = "cpu";
    ours.decoder = "quantem";
    try {
      t = timed_load(path, ours, 1, &detail);
      bench::row("load cpu, our host decoder on all cores", shape, t, decoded, detail);
    } catch (const std::exception& e) {
      std::printf("load cpu with our decoder: %s\n", e.what());
    }
    io::LoadOptions ref;
    ref.backend = "cpu";
    ref.decoder = "hdf5";
    const std::size_t rows = std::min(reference_rows, fi.shape.scan_rows);
    ref.scan_region = {0, 0, rows, fi.shape.scan_cols};
    const double t0 = bench::now_s();
    Dataset ds = io::load(path, ref);
    const double tr = bench::now_s() - t0;
    char band[160];
    std::snprintf(band, sizeof(band), "%zux%zux%zux%zu %s (first %zu scan rows)", rows, fi.shape.scan_cols,
                  fi.shape.det_rows, fi.shape.det_cols, dtype_name(fi.dtype).c_str(), rows);
    bench::row("load cpu, HDF5 C API + bitshuffle plugin (1 thread): the reference", band, tr,
               decoded * double(rows) / double(fi.shape.scan_rows), "same file, same run");
  }
  return 0;
}

QGPU_BENCH_MAIN("usage: bench_load FILE [scan det dtype] [--skip-cpu] [--reference-rows N] [--direct] [--write-only]")
