#pragma once
// Every benchmark's entry: -h/--help prints its usage, an error is one line naming it (exit 1), never an abort.
// A bench defines `static int bench_main(int, char**)` and ends with QGPU_BENCH_MAIN("usage: ...").
#include <cstdio>
#include <cstring>
#include <exception>

namespace qgpu::bench {

inline int guarded_main(int argc, char** argv, const char* usage, int (*body)(int, char**)) {
  for (int i = 1; i < argc; ++i)
    if (std::strcmp(argv[i], "-h") == 0 || std::strcmp(argv[i], "--help") == 0) {
      std::printf("%s\n", usage);
      return 0;
    }
  try {
    return body(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: error: %s\n%s\n", argv[0], e.what(), usage);
    return 1;
  }
}

}  // namespace qgpu::bench

#define QGPU_BENCH_MAIN(usage) \
  int main(int argc, char** argv) { return qgpu::bench::guarded_main(argc, argv, usage, bench_main); }
