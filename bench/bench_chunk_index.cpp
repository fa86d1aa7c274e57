// The chunk index parse alone (issue 33): object header -> layout -> every chunk's place, from the file bytes, as
// inspect runs it (the HDF5 library opens the dataset once, outside the timed loop). Prints the median and the
// fastest of N parses and of N read_chunk_table calls (the HDF5 queries around the parse included), and the chunks
// found.
// usage: bench_chunk_index FILE [DATASET=/entry/data/data] [--reps N]
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "bench_common.hpp"
#include "io/hdf5/h5_handle.hpp"
#include "io/hdf5/index/dataset_location.hpp"

using namespace qgpu;

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: bench_chunk_index FILE [DATASET] [--reps N]\n");
    return 2;
  }
  const std::string path = argv[1];
  const std::string dset = argc > 2 && argv[2][0] != '-' ? argv[2] : "/entry/data/data";
  int reps = 21;
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], "--reps") == 0) reps = std::stoi(argv[i + 1]);
  try {
    h5::Handle f = h5::open_file(path);
    h5::Handle ds = h5::open_dataset(f, dset, path);
    const io::h5index::DatasetLocation loc = io::h5index::locate_dataset(ds.get());
    const std::string file = loc.file.empty() ? path : loc.file;
    std::vector<double> t, whole;
    std::size_t written = 0;
    std::string kind;
    for (int rep = 0; rep <= reps; ++rep) {  // rep 0 warms the page cache
      const double t0 = bench::now_s();
      io::h5index::FileByteSource src(file);
      const io::h5index::ParsedIndex p = io::h5index::parse_chunk_index(src, loc.request);
      const double t1 = bench::now_s();
      if (rep == 0) {
        kind = p.kind;
        for (const auto& c : p.chunks) written += c.size > 0;
        continue;
      }
      t.push_back(t1 - t0);
      (void)io::read_chunk_table(ds.get(), path, dset);  // as inspect calls it: HDF5 queries + locate + parse
      whole.push_back(bench::now_s() - t1);
    }
    std::sort(whole.begin(), whole.end());
    std::sort(t.begin(), t.end());
    std::printf("%s: %s, %zu chunks written; parse median %.2f ms, fastest %.2f ms; read_chunk_table median %.2f ms, "
                "fastest %.2f ms (%d reps)\n",
                path.c_str(), kind.c_str(), written, t[t.size() / 2] * 1e3, t.front() * 1e3,
                whole[whole.size() / 2] * 1e3, whole.front() * 1e3, reps);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_chunk_index: %s\n", e.what());
    return 1;
  }
}
