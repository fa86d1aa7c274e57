// Loading uncompressed formats (NumPy .npy, raw, Merlin .mib, Gatan DM4, EMPAD) on the GPU against the floor of the
// same run: every byte of the file pread by 16 threads into pinned memory (two 1 GiB buffers in turn) while the
// previous window is copied to one device buffer of the file's size. Then the qgpu load (cuda, dense) of the same
// file, median of --reps warm loads after one more. The file is read once before, so both run from the page cache.
// --floor-file F: the floor reads F (the bulk of a format whose named file is a header: EMPAD's .raw beside the .xml).
// --convert OUT.h5: then `qgpu convert` of FILE (io::convert, same load options) to DECTRIS-style bitshuffle+LZ4
// HDF5, timed (GB/s of the dense counts, output size), and the median of --reps loads of OUT.h5 against the loads of
// FILE above. --backend cpu: the floor is the pread alone into host memory and the loads are cpu loads (for a run
// on a machine without a GPU: the step checks of scripts/device_run.sh with QGPU_BENCH_SMALL=1).
// usage: bench_formats FILE [--reps N] [--backend cuda|cpu] [--floor-file F] [--convert OUT.h5]
//                           [--format F --dtype D --detector-shape R C --scan-shape R C ...]
//   (load options as `qgpu image` takes them: whatever the file cannot say)
#include <cuda_runtime.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <atomic>
#include <thread>
#include <vector>

#include "bench_common.hpp"
#include "io/convert.hpp"
#include "io/hdf5/load.hpp"
#include "bench_guard.hpp"

using namespace qgpu;

namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}

// pread of [off, off + n) into dst by `threads` threads, 4 MiB pieces.
void parallel_pread(int fd, std::uint8_t* dst, std::uint64_t off, std::uint64_t n, unsigned threads) {
  constexpr std::uint64_t kPiece = std::uint64_t(4) << 20;
  std::atomic<std::uint64_t> next{0};
  auto run = [&] {
    for (std::uint64_t p = next.fetch_add(kPiece); p < n; p = next.fetch_add(kPiece)) {
      const std::uint64_t k = std::min(kPiece, n - p);
      std::uint64_t done = 0;
      while (done < k) {
        const ssize_t got = ::pread(fd, dst + p + done, k - done, off_t(off + p + done));
        if (got <= 0) {
          std::fprintf(stderr, "pread failed\n");
          std::exit(1);
        }
        done += std::uint64_t(got);
      }
    }
  };
  std::vector<std::jthread> pool;
  for (unsigned t = 1; t < threads; ++t) pool.emplace_back(run);
  run();
}

// Seconds for the floor: read the whole file into pinned windows and copy each to the device.
double floor_seconds(const std::string& path, unsigned threads) {
  const std::uint64_t size = std::filesystem::file_size(path);
  constexpr std::uint64_t kWindow = std::uint64_t(1) << 30;
  void* pinned[2];
  for (auto& p : pinned) check(cudaMallocHost(&p, kWindow), "cudaMallocHost");
  void* dev = nullptr;
  check(cudaMalloc(&dev, size), "cudaMalloc");
  cudaStream_t s;
  cudaEvent_t done[2];
  check(cudaStreamCreate(&s), "stream");
  for (auto& e : done) check(cudaEventCreate(&e), "event");
  const int fd = ::open(path.c_str(), O_RDONLY);
  const double t0 = bench::now_s();
  bool used[2] = {false, false};
  for (std::uint64_t off = 0, w = 0; off < size; off += kWindow, ++w) {
    const int b = int(w % 2);
    if (used[b]) check(cudaEventSynchronize(done[b]), "sync");
    const std::uint64_t n = std::min(kWindow, size - off);
    parallel_pread(fd, static_cast<std::uint8_t*>(pinned[b]), off, n, threads);
    check(cudaMemcpyAsync(static_cast<char*>(dev) + off, pinned[b], n, cudaMemcpyHostToDevice, s), "copy");
    check(cudaEventRecord(done[b], s), "record");
    used[b] = true;
  }
  check(cudaStreamSynchronize(s), "sync");
  const double t = bench::now_s() - t0;
  ::close(fd);
  for (auto& p : pinned) cudaFreeHost(p);
  cudaFree(dev);
  for (auto& e : done) cudaEventDestroy(e);
  cudaStreamDestroy(s);
  return t;
}

// Seconds for the host floor (no GPU): read the whole file into two host windows in turn.
double host_floor_seconds(const std::string& path, unsigned threads) {
  const std::uint64_t size = std::filesystem::file_size(path);
  constexpr std::uint64_t kWindow = std::uint64_t(1) << 30;
  std::vector<std::uint8_t> windows[2];
  for (auto& w : windows) w.resize(std::min(kWindow, size));
  const int fd = ::open(path.c_str(), O_RDONLY);
  const double t0 = bench::now_s();
  for (std::uint64_t off = 0, w = 0; off < size; off += kWindow, ++w)
    parallel_pread(fd, windows[w % 2].data(), off, std::min(kWindow, size - off), threads);
  const double t = bench::now_s() - t0;
  ::close(fd);
  return t;
}

// Median seconds of `reps` loads after one more; the reader and codec of the last.
double median_load(const std::string& path, const io::LoadOptions& o, int reps, std::string& reader, std::string& codec) {
  std::vector<double> loads;
  for (int r = 0; r <= reps; ++r) {
    const double t0 = bench::now_s();
    Dataset ds = io::load(path, o);
    const double t = bench::now_s() - t0;
    if (r > 0) loads.push_back(t);
    reader = ds.provenance().parameters.value("format", std::string("?"));
    codec = ds.provenance().parameters.value("codec", std::string("?"));
    std::fprintf(stderr, "load %s %d: %.1f ms (%s)\n", std::filesystem::path(path).filename().c_str(), r, t * 1e3,
                 ds.provenance().parameters.at("timing").dump().c_str());
  }
  return bench::median(loads);
}

}  // namespace

static int bench_main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: bench_formats FILE [--reps N] [--format F] [--dtype D] [--detector-shape R C] "
                         "[--scan-shape R C] [--offset N] [--frame-header N]\n");
    return 2;
  }
  const std::string path = argv[1];
  io::LoadOptions o;
  o.backend = "cuda";
  o.representation = "dense";
  int reps = 5;
  std::string floor_file = path, convert_out;
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--reps") reps = std::stoi(next());
    else if (a == "--backend") o.backend = next();
    else if (a == "--floor-file") floor_file = next();
    else if (a == "--convert") convert_out = next();
    else if (a == "--format") o.format = next();
    else if (a == "--dtype") o.raw.dtype = next();
    else if (a == "--detector-shape") o.raw.det_rows = std::stoul(next()), o.raw.det_cols = std::stoul(next());
    else if (a == "--scan-shape") o.scan_rows = std::stoul(next()), o.scan_cols = std::stoul(next());
    else if (a == "--offset") o.raw.offset = std::stoull(next());
    else if (a == "--frame-header") o.raw.frame_header = std::stoull(next());
    else if (a == "--representation") o.representation = next();
    else {
      std::fprintf(stderr, "bench_formats: unknown argument '%s'\n", a.c_str());
      return 2;
    }
  }
  if (o.backend != "cuda" && o.backend != "cpu") {
    std::fprintf(stderr, "bench_formats: --backend is cuda or cpu\n");
    return 2;
  }
  const bool gpu = o.backend == "cuda";
  const auto floor_once = [&] { return gpu ? floor_seconds(floor_file, 16) : host_floor_seconds(floor_file, 16); };
  const double gb = double(std::filesystem::file_size(floor_file)) / 1e9;
  floor_once();  // warms the page cache and the CUDA context
  std::vector<double> floors;
  for (int r = 0; r < 3; ++r) floors.push_back(floor_once());
  const double fl = bench::median(floors);
  std::string reader, codec;
  const double ld = median_load(path, o, reps, reader, codec);
  const std::string floor_name = std::filesystem::path(floor_file).filename().string();
  std::printf("| file | reader | codec | GB | floor (16-thread pread -> %s) | qgpu load %s dense | load / floor |\n",
              gpu ? "pinned -> GPU" : "host memory", o.backend.c_str());
  std::printf("| --- | --- | --- | --- | --- | --- | --- |\n");
  std::printf("| %s%s | %s | %s | %.2f | %.1f ms (%.1f GB/s) | %.1f ms (%.1f GB/s) | %.2fx |\n",
              std::filesystem::path(path).filename().c_str(),
              floor_file == path ? "" : (" (floor: " + floor_name + ")").c_str(), reader.c_str(), codec.c_str(), gb,
              fl * 1e3, gb / fl, ld * 1e3, gb / ld, ld / fl);
  if (!convert_out.empty()) {
    std::filesystem::remove(convert_out);
    io::ConvertOptions co;
    const double t0 = bench::now_s();
    const io::ConvertResult r = io::convert(path, convert_out, o, co);
    const double tc = bench::now_s() - t0;
    std::string h5_reader, h5_codec;
    const double lh = median_load(convert_out, o, reps, h5_reader, h5_codec);
    const double dense_gb = double(r.dense_bytes) / 1e9, out_gb = double(r.file_bytes) / 1e9;
    std::printf("\n| convert | dense GB | qgpu convert (%s load + encode + write) | load / write part | output | "
                "smaller | load of output (%s, %s) | load of %s | output / source load |\n",
                o.backend.c_str(), h5_reader.c_str(), h5_codec.c_str(), std::filesystem::path(path).filename().c_str());
    std::printf("| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
    std::printf("| %s -> %s | %.2f | %.2f s (%.2f GB/s of counts, %.2f GB/s of %s) | %.2f s / %.2f s | %.3f GB | "
                "%.1fx | %.1f ms (%.1f GB/s of counts) | %.1f ms | %.3fx |\n",
                std::filesystem::path(path).filename().c_str(), std::filesystem::path(convert_out).filename().c_str(),
                dense_gb, tc, dense_gb / tc, gb / tc, floor_name.c_str(), r.load_seconds, r.write_seconds, out_gb,
                out_gb > 0 ? dense_gb / out_gb : 0.0, lh * 1e3, dense_gb / lh, ld * 1e3, lh / ld);
  }
  return 0;
}

QGPU_BENCH_MAIN("usage: bench_formats FILE [--reps N] [--backend cuda|cpu] [--floor-file F] [--convert OUT.h5]")
