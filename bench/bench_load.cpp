// Load throughput: CUDA path (direct chunk reads + GPU bitshuffle/LZ4 decode) against the CPU reference
// (HDF5 C API + bitshuffle plugin, single thread), in one run on the same file.
// usage: bench_load FILE [scan det dtype] [--skip-cpu]
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "bench_common.hpp"
#include "io/hdf5/load.hpp"

using namespace qgpu;

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: bench_load FILE [scan det dtype] [--skip-cpu]\n");
    return 2;
  }
  const std::string path = argv[1];
  const std::size_t scan = argc > 3 ? std::stoul(argv[2]) : 512, det = argc > 3 ? std::stoul(argv[3]) : 192;
  const DType dtype = argc > 4 ? dtype_from_name(argv[4]) : DType::u16;
  bool skip_cpu = false;
  for (int i = 1; i < argc; ++i) skip_cpu = skip_cpu || std::strcmp(argv[i], "--skip-cpu") == 0;
  bench::ensure_sample(path, scan, det, dtype);
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
  std::vector<double> times;
  for (int rep = 0; rep < 4; ++rep) {
    const double t0 = bench::now_s();
    Dataset ds = io::load(path, cuda);
    const double t = bench::now_s() - t0;
    if (rep > 0) times.push_back(t);  // first run warms the page cache and the CUDA context
    std::fprintf(stderr, "cuda load %d: %.3f s %s\n", rep, t, ds.provenance().parameters.at("timing_s").dump().c_str());
  }
  bench::row("load cuda (direct chunk read + GPU decode), median of 3 warm", shape, bench::median(times), decoded,
             "file in page cache; GB/s of decoded data");
  {  // where the time goes: chunk lookup alone
    const double t0 = bench::now_s();
    const io::LoadPlan plan = io::plan_load(path, cuda);
    std::printf("plan (inspect) %.3f s\n", bench::now_s() - t0);
  }
  if (!skip_cpu) {
    io::LoadOptions cpu;
    cpu.backend = "cpu";
    const double t0 = bench::now_s();
    Dataset ds = io::load(path, cpu);
    const double t = bench::now_s() - t0;
    bench::row("load cpu (HDF5 C API + bitshuffle plugin, 1 thread)", shape, t, decoded, "same file, same run");
  }
  return 0;
}
