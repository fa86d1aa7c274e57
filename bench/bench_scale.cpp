// Scale run of the encoded resident: a scan K times larger per side than a written sample, loaded encoded on the
// GPU, with load time, resident bytes and warm BF/CoM times (public API, host timer, median of 5 after 1 warm-up),
// and a BF of a band of scan rows checked against the CPU reference (the band loaded alone with the cpu backend).
//
//   bench_scale BIG.h5 --tile-from SMALL.h5 --factor K   writes BIG.h5 first (if missing): the raw compressed chunks
//                                                       of SMALL.h5 repeated K x K times over the scan (direct chunk
//                                                       writes, same bitshuffle+LZ4 block size, fixed-array chunk
//                                                       index; the small file must be bitshuffle+LZ4), so
//                                                       its frames are real sample frames at K^2 times the count
//   bench_scale BIG.h5 [--check-rows N] [--backend B]    (default 16 rows in the middle of the scan, cuda)

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "bench_common.hpp"
#include "detector/virtual_detector.hpp"
#include "dpc/com.hpp"
#include "io/hdf5/load.hpp"
#include "io/hdf5/read/chunk_sources.hpp"
#include "io/hdf5/read/parallel_reader.hpp"
#include "io/hdf5/read/read_batches.hpp"
#include "io/hdf5/write_dectris.hpp"

using namespace qgpu;

namespace {

double median_ms(const std::function<void()>& f) { return bench::host_median_ms(f, 1, 5); }

// BIG = SMALL's chunks tiled factor x factor over the scan, written with direct chunk writes.
void write_tiled(const std::string& big, const std::string& small, std::size_t factor) {
  const double t0 = bench::now_s();
  const io::LoadPlan p = io::plan_load(small, {});
  const io::FileInfo& fi = p.info;
  if (!fi.bitshuffle_lz4) throw FormatError("--tile-from needs a bitshuffle+LZ4 file");
  const io::ChunkSources src = io::locate_chunks(p);
  io::BatchLimits all;
  all.max_bytes = ~std::uint64_t(0);
  const auto batches = io::plan_batches(src, p.scan.cols, p.scan.rows, all);
  const io::ReadBatch& b = batches.front();
  std::vector<std::uint8_t> comp(b.buffer_bytes);
  io::ParallelReader(src.files, false, 0).read(b, comp.data());
  const std::size_t R = fi.shape.scan_rows, C = fi.shape.scan_cols;
  std::vector<std::uint64_t> at(R * C), size(R * C);  // chunk of each stored frame in `comp`
  for (std::size_t i = 0; i < src.chunks.size(); ++i) {
    at[src.frames[i]] = b.chunk_dst[i];
    size[src.frames[i]] = src.chunks[i].size;
  }
  // The small file's element type, byte order and bitshuffle+LZ4 block size (the chunks are copied as they are).
  const std::size_t BR = R * factor, BC = C * factor;
  io::DectrisLayout l;
  l.det_rows = fi.shape.det_rows;
  l.det_cols = fi.shape.det_cols;
  l.dtype = fi.dtype;
  l.big_endian = fi.byte_order == "big";
  l.frames = BR * BC;
  l.scan_rows = BR;
  l.scan_cols = BC;
  l.bitshuffle.block_elems = fi.bitshuffle_block_elems;
  l.fixed_array_index = true;  // O(1) chunk index inserts
  io::DectrisWriter w;
  w.open(big, l);
  for (std::size_t r = 0; r < BR; ++r)
    for (std::size_t c = 0; c < BC; ++c) {
      const std::size_t s = (r % R) * C + (c % C);
      w.write_chunk(r * BC + c, comp.data() + at[s], size[s]);
    }
  w.close();
  std::fprintf(stderr, "wrote %s: %zux%zu scan tiled %zux%zu from %s, %.2f GB on disk, in %.1f s\n", big.c_str(), BR,
               BC, factor, factor, small.c_str(), double(std::filesystem::file_size(big)) / 1e9,
               bench::now_s() - t0);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: bench_scale BIG.h5 [--tile-from SMALL.h5 --factor K] [--check-rows N] [--backend cuda|cpu]\n");
    return 2;
  }
  const std::string path = argv[1];
  std::string small;
  std::size_t factor = 4, check_rows = 16;
  std::string backend = "cuda";
  for (int i = 2; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--tile-from")) small = argv[i + 1];
    else if (!std::strcmp(argv[i], "--factor")) factor = std::stoul(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--check-rows")) check_rows = std::stoul(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--backend")) backend = argv[i + 1];
  }
  try {
    if (!std::filesystem::exists(path)) {
      if (small.empty()) throw InvalidArgument("'" + path + "' does not exist and no --tile-from was given");
      write_tiled(path, small, factor);
    }
    io::LoadOptions o;
    o.backend = backend;
    o.representation = "encoded";
    const double t0 = bench::now_s();
    const Dataset ds = io::load(path, o);
    const double load_s = bench::now_s() - t0;
    const Shape4D& s = ds.shape();
    const double file = double(std::filesystem::file_size(path));
    std::printf("| load encoded | %zux%zux%zux%zu | %.1f ms | %.1f GB/s decoded | resident %.3f GB, dense %.1f GB "
                "(%.1fx smaller), file %.2f GB |\n",
                s.scan_rows, s.scan_cols, s.det_rows, s.det_cols, load_s * 1e3, ds.dense_bytes() / load_s / 1e9,
                ds.resident_bytes() / 1e9, ds.dense_bytes() / 1e9, double(ds.dense_bytes()) / ds.resident_bytes(),
                file / 1e9);
    std::printf("load timing: %s\n", ds.provenance().parameters.value("timing", nlohmann::json()).dump().c_str());
    const detector::DiskFit fit = detector::fit_bf_disk(ds);
    const detector::Center c{fit.center_row, fit.center_col};
    Image<std::uint64_t> bf;
    std::printf("| BF (fitted disk r=%.1f), encoded | %.1f ms |\n", fit.radius,
                median_ms([&] { bf = detector::bf(ds, fit.radius, c); }));
    std::printf("| CoM (both maps), encoded | %.1f ms |\n", median_ms([&] { dpc::center_of_mass(ds); }));
    std::fflush(stdout);
    // The CPU reference on a band of rows in the middle of the scan.
    check_rows = std::min(check_rows, s.scan_rows);
    io::LoadOptions co;
    co.backend = "cpu";
    co.scan_region = {s.scan_rows / 2, 0, check_rows, s.scan_cols};
    const Dataset band = io::load(path, co);
    const Image<std::uint64_t> ref = detector::bf(band, fit.radius, c);
    const bool equal =
        std::equal(ref.data.begin(), ref.data.end(), bf.data.begin() + std::ptrdiff_t(s.scan_rows / 2 * s.scan_cols));
    std::printf("| BF rows %zu..%zu against the CPU reference | %s |\n", s.scan_rows / 2,
                s.scan_rows / 2 + check_rows - 1, equal ? "equal" : "DIFFERS");
    return equal ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_scale: %s\n", e.what());
    return 1;
  }
}
