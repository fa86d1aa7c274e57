#pragma once
// The GPU-resident benchmark dataset named on the command line: FILE [scan det dtype] (written first if missing).
#include <cstdio>
#include <cstdlib>
#include <string>

#include "bench_common.hpp"
#include "io/hdf5/load.hpp"

namespace qgpu::bench {

inline Dataset load_benchmark_dataset(int argc, char** argv, const char* program) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s FILE [scan det dtype]\n", program);
    std::exit(2);
  }
  const std::string path = argv[1];
  const std::size_t scan = argc > 3 ? std::stoul(argv[2]) : 512, det = argc > 3 ? std::stoul(argv[3]) : 192;
  ensure_sample(path, scan, det, argc > 4 ? dtype_from_name(argv[4]) : DType::u16);
  io::LoadOptions o;
  o.backend = "cuda";
  return io::load(path, o);
}

}  // namespace qgpu::bench
