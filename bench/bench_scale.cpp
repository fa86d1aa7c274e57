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
//                      [--basis-only]                    skip the load without the radial basis
//
// Then loaded again with the radial basis (LoadOptions::radial_basis "on", resident/basis/radial_basis.hpp): load
// time and basis bytes, BF / ADF / CoM / iDPC of detectors centred on the basis centre at integer radii (served by
// the basis), an off-centre BF disk (the decode path), each checked on the band against the CPU reference (iDPC is
// a whole-scan FFT: its time only). The coarse scan-binned answer (issue 33 item 1 B) is not built yet.

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "bench_common.hpp"
#include "detector/virtual_detector.hpp"
#include "dpc/com.hpp"
#include "dpc/idpc.hpp"
#include "resident/encoded/encoded_resident.hpp"
#include "io/hdf5/load.hpp"
#include "io/hdf5/read/chunk_sources.hpp"
#include "io/hdf5/read/parallel_reader.hpp"
#include "io/hdf5/read/read_batches.hpp"
#include "io/hdf5/write_dectris.hpp"
#include "bench_guard.hpp"

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

// The band of rows [r0, r0 + n) of a scan image.
template <class T>
bool band_equal(const std::vector<T>& whole, const std::vector<T>& band, std::size_t r0, std::size_t cols) {
  return band.size() <= whole.size() - r0 * cols &&
         std::memcmp(band.data(), whole.data() + r0 * cols, band.size() * sizeof(T)) == 0;
}

// Today's path: loaded encoded without the basis, BF and CoM through the decode.
bool run_without_basis(const std::string& path, const std::string& backend, std::size_t check_rows) {
  io::LoadOptions o;
  o.backend = backend;
  o.representation = "encoded";
  o.radial_basis = "off";
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
  return equal;
}

// Loaded with the radial basis; centred detectors through it, an off-centre one through the decode.
bool run_with_basis(const std::string& path, const std::string& backend, std::size_t check_rows) {
  io::LoadOptions o;
  o.backend = backend;
  o.representation = "encoded";
  o.radial_basis = "on";
  const double t0 = bench::now_s();
  const Dataset ds = io::load(path, o);
  const double load_s = bench::now_s() - t0;
  const Shape4D& s = ds.shape();
  const RadialBasis* b = ds.encoded()->radial_basis();
  if (!b) throw Error("no radial basis: " + ds.encoded()->radial_basis_report().dump());
  std::printf("| load encoded + radial basis | %zux%zux%zux%zu | %.1f ms | resident %.3f GB + basis %.3f GB (%u "
              "boundaries, centre %.2f, %.2f) |\n",
              s.scan_rows, s.scan_cols, s.det_rows, s.det_cols, load_s * 1e3, ds.resident_bytes() / 1e9,
              b->bytes() / 1e9, b->boundaries(), b->center_row(), b->center_col());
  std::printf("encoder stages: %s\n", ds.encoded()->encoder_stages().c_str());
  const detector::DiskFit fit = detector::fit_bf_disk(ds);
  const detector::Center c{b->center_row(), b->center_col()};
  const double r = std::max(1.0, std::round(fit.radius));
  const double edge = std::min({c.first, double(s.det_rows) - 1 - c.first, c.second, double(s.det_cols) - 1 - c.second});
  const double inner = std::ceil(1.2 * fit.radius), outer = std::max(inner + 1, std::floor(std::min(3 * fit.radius, edge)));
  const auto strategy = [](const SumImage& img) { return img.provenance().parameters.value("strategy", std::string()); };
  SumImage bf, adf, off;
  dpc::ComResult com;
  // (each timing before the line that prints it and the strategy it used: argument order is unspecified)
  double ms = median_ms([&] { bf = detector::bf(ds, r, c); });
  std::printf("| BF (basis centre, r=%.0f), basis | %.2f ms | %s |\n", r, ms, strategy(bf).c_str());
  ms = median_ms([&] { adf = detector::adf(ds, inner + 1e-9, outer, c); });
  std::printf("| ADF (%.0f..%.0f], basis | %.2f ms | %s |\n", inner, outer, ms, strategy(adf).c_str());
  ms = median_ms([&] { com = dpc::center_of_mass(ds); });
  std::printf("| CoM (both maps), basis | %.2f ms | %s |\n", ms,
              com.provenance.parameters.value("strategy", std::string("decode")).c_str());
  ms = median_ms([&] {
    const dpc::DpcResult d = dpc::centered_dpc(dpc::center_of_mass(ds));
    dpc::idpc(d.dpc_row, d.dpc_col);
  });
  std::printf("| CoM -> DPC -> iDPC, basis | %.2f ms |\n", ms);
  const detector::Center oc{c.first + 0.37 * r, c.second - 0.29 * r};
  ms = median_ms([&] { off = detector::bf(ds, r, oc); });
  std::printf("| BF off-centre (%.2f, %.2f), exact decode | %.2f ms | %s |\n", oc.first, oc.second, ms,
              strategy(off).c_str());
  std::printf("| off-centre coarse (scan-binned) | not built yet (issue 33 item 1 B) |\n");
  std::fflush(stdout);
  check_rows = std::min(check_rows, s.scan_rows);
  const std::size_t r0 = s.scan_rows / 2;
  io::LoadOptions co;
  co.backend = "cpu";
  co.representation = "dense";
  co.radial_basis = "off";
  co.scan_region = {r0, 0, check_rows, s.scan_cols};
  const Dataset band = io::load(path, co);
  bool ok = true;
  const auto check = [&](const char* what, bool equal) {
    std::printf("| %s rows %zu..%zu against the CPU reference | %s |\n", what, r0, r0 + check_rows - 1,
                equal ? "equal" : "DIFFERS");
    ok = ok && equal;
  };
  check("BF (basis)", band_equal(bf.counts("bf").data, detector::bf(band, r, c).counts("bf").data, r0, s.scan_cols));
  check("ADF (basis)", band_equal(adf.counts("adf").data, detector::adf(band, inner + 1e-9, outer, c).counts("adf").data,
                                  r0, s.scan_cols));
  const dpc::ComResult bc = dpc::center_of_mass(band);
  check("CoM (basis)", band_equal(com.com_row.data, bc.com_row.data, r0, s.scan_cols) &&
                           band_equal(com.com_col.data, bc.com_col.data, r0, s.scan_cols));
  check("BF off-centre (decode)", band_equal(off.counts("bf").data, detector::bf(band, r, oc).counts("bf").data, r0,
                                             s.scan_cols));
  std::fflush(stdout);
  return ok;
}

}  // namespace

static int bench_main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: bench_scale BIG.h5 [--tile-from SMALL.h5 --factor K] [--check-rows N] [--backend cuda|cpu] [--basis-only]\n");
    return 2;
  }
  const std::string path = argv[1];
  std::string small;
  std::size_t factor = 4, check_rows = 16;
  std::string backend = "cuda";
  bool basis_only = false;
  for (int i = 2; i < argc; ++i)
    if (!std::strcmp(argv[i], "--basis-only")) basis_only = true;
  for (int i = 2; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--basis-only")) {
      --i;
      continue;
    }
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
    bool ok = true;
    if (!basis_only) ok = run_without_basis(path, backend, check_rows);
    ok = run_with_basis(path, backend, check_rows) && ok;
    return ok ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_scale: %s\n", e.what());
    return 1;
  }
}

QGPU_BENCH_MAIN("usage: bench_scale BIG.h5 [--tile-from SMALL.h5 --factor K] [--check-rows N] [--backend cuda|cpu] [--basis-only]")
