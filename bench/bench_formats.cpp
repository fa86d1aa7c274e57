// Loading uncompressed formats (NumPy .npy, raw, Merlin .mib) on the GPU against the floor of the same run: every
// byte of the file pread by 16 threads into pinned memory (two 1 GiB buffers in turn) while the previous window is
// copied to one device buffer of the file's size. Then the qgpu load (cuda, dense) of the same file, median of
// --reps warm loads after one more. The file is read once before, so both run from the page cache.
// usage: bench_formats FILE [--reps N] [--format F --dtype D --detector-shape R C --scan-shape R C ...]
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
#include "io/hdf5/load.hpp"

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

}  // namespace

int main(int argc, char** argv) {
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
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--reps") reps = std::stoi(next());
    else if (a == "--format") o.format = next();
    else if (a == "--dtype") o.raw.dtype = next();
    else if (a == "--detector-shape") o.raw.det_rows = std::stoul(next()), o.raw.det_cols = std::stoul(next());
    else if (a == "--scan-shape") o.scan_rows = std::stoul(next()), o.scan_cols = std::stoul(next());
    else if (a == "--offset") o.raw.offset = std::stoull(next());
    else if (a == "--frame-header") o.raw.frame_header = std::stoull(next());
    else if (a == "--representation") o.representation = next();
  }
  const double gb = double(std::filesystem::file_size(path)) / 1e9;
  floor_seconds(path, 16);  // warms the page cache and the CUDA context
  std::vector<double> floors;
  for (int r = 0; r < 3; ++r) floors.push_back(floor_seconds(path, 16));
  const double fl = bench::median(floors);
  std::vector<double> loads;
  std::string reader, codec;
  for (int r = 0; r <= reps; ++r) {
    const double t0 = bench::now_s();
    Dataset ds = io::load(path, o);
    const double t = bench::now_s() - t0;
    if (r > 0) loads.push_back(t);
    reader = ds.provenance().parameters.value("format", std::string("?"));
    codec = ds.provenance().parameters.value("codec", std::string("?"));
    std::fprintf(stderr, "load %d: %.1f ms (%s)\n", r, t * 1e3, ds.provenance().parameters.at("timing").dump().c_str());
  }
  const double ld = bench::median(loads);
  std::printf("| file | reader | codec | GB | floor (16-thread pread -> pinned -> GPU) | qgpu load cuda dense | load / floor |\n");
  std::printf("| --- | --- | --- | --- | --- | --- | --- |\n");
  std::printf("| %s | %s | %s | %.2f | %.1f ms (%.1f GB/s) | %.1f ms (%.1f GB/s) | %.2fx |\n",
              std::filesystem::path(path).filename().c_str(), reader.c_str(), codec.c_str(), gb, fl * 1e3, gb / fl,
              ld * 1e3, gb / ld, ld / fl);
  return 0;
}
