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
//                      [--no-ssb | --ssb]                SSB rows: by default only up to 2048x2048 scans (at 4096^2
//                                                       the prepare decodes the BF disk's ~54 G counts and G at bin
//                                                       2 is 56 GB: --ssb runs it there too; --no-ssb skips it)
//
// Then loaded again with the radial basis (LoadOptions::radial_basis "on", resident/basis/radial_basis.hpp): load
// time and basis bytes, BF / ADF / CoM / iDPC of detectors centred on the basis centre at integer radii (served by
// the basis), an off-centre BF disk (the decode path), each checked on the band against the CPU reference (iDPC is
// a whole-scan FFT: its time only). The same load keeps the scan-binned copy at the viewer's display bin (LoadOptions::
// scan_binned auto: 2 at 2048^2, 4 at 4096^2): off-centre BF / ADF / CoM / iDPC at that bin through it, checked
// against the exact full answer binned and the band's binned CPU reference.
// Then SSB on the same resident (ssb::Reconstructor, issue 33 item 1): prepare at detector bin 4, then 2 (G(K, Q)
// built: the BF pixels decoded and transformed), the first image, the warm C1 slider (3 new C1 values, median) and
// a CoM -> iDPC with G held, with G's bytes resident and regathered per move (the engine's describe()); the phase
// checked finite, not constant and periodic with the small file's scan (the tiled sample), tolerance kTileTol.
// The calibration: the big file's (write_tiled copies the small file's), else the small file's.

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "bench_common.hpp"
#include "core/result_memory.hpp"
#include "core/stage_timing.hpp"
#include "detector/virtual_detector.hpp"
#include "dpc/com.hpp"
#include "dpc/idpc.hpp"
#include "dpc/pipeline.hpp"
#include "ssb/ssb.hpp"
#include "resident/scan_bin.hpp"
#include "resident/encoded/encoded_resident.hpp"
#include "io/hdf5/admission.hpp"
#include "io/hdf5/file_info.hpp"
#include "io/hdf5/file_info_wire.hpp"
#include "io/hdf5/load.hpp"
#include "io/hdf5/read/chunk_sources.hpp"
#include "io/hdf5/read/parallel_reader.hpp"
#include "io/hdf5/read/read_batches.hpp"
#include "io/hdf5/write_dectris.hpp"
#include "bench_guard.hpp"

using namespace qgpu;

namespace {

double median_ms(const std::function<void()>& f) { return bench::host_median_ms(f, 1, 5); }

// Where one call's time goes: the stages the library marks (core/stage_timing.hpp), and the total.
std::string stages_of(const std::function<void()>& f) {
  timing::Recording rec;
  f();
  std::string out;
  char buf[96];
  for (const auto& [name, ms] : rec.stages()) {
    std::snprintf(buf, sizeof buf, "%s %.2f ms, ", name.c_str(), ms);
    out += buf;
  }
  std::snprintf(buf, sizeof buf, "total %.2f ms", rec.elapsed_ms());
  return out + buf;
}

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
  for (const auto& [key, v] : fi.calibration.items())  // the same optics (energy, semiangle, step, ...) for SSB
    if (v.is_number()) l.calibration[key] = v;
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
  o.scan_binned = "off";
  // The load's first plan (metadata and chunk index, parsed in a child process) timed apart, then the load, which
  // finds it cached: the two together are what a first load costs.
  const double t0 = bench::now_s();
  (void)io::plan_load(path, o);
  const double plan_s = bench::now_s() - t0;
  const Dataset ds = io::load(path, o);
  const double load_s = bench::now_s() - t0;
  const Shape4D& s = ds.shape();
  const double file = double(std::filesystem::file_size(path));
  std::printf("first plan of the load below %.1f ms (inspect in a child process), the load after it %.1f ms\n",
              plan_s * 1e3, (load_s - plan_s) * 1e3);
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
  // The first CoM computes the resident's moment totals (one decode of every stream); later ones without a mask
  // are the totals, with a mask the totals minus the cheaper complement (EncodedResident::moment_sums).
  const double first_com = bench::now_s();
  dpc::center_of_mass(ds);
  std::printf("| CoM (both maps), encoded, first (computes the moment totals) | %.1f ms |\n",
              (bench::now_s() - first_com) * 1e3);
  dpc::ComResult com_all;
  const double later_ms = median_ms([&] { com_all = dpc::center_of_mass(ds); });
  std::printf("| CoM (both maps), encoded, later | %.2f ms | %s |\n", later_ms,
              com_all.provenance.parameters.value("strategy", std::string()).c_str());
  {
    dpc::ComOptions o;
    const detector::Mask m = detector::disk(s.det_rows, s.det_cols, c.first + 0.37 * fit.radius,
                                            c.second - 0.29 * fit.radius, fit.radius);
    o.mask = {m.weights.begin(), m.weights.end()};
    dpc::ComResult off;
    const double off_ms = median_ms([&] { off = dpc::center_of_mass(ds, o); });
    std::printf("| CoM off-centre disk, encoded | %.1f ms | %s |\n", off_ms,
                off.provenance.parameters.value("strategy", std::string()).c_str());
  }
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
// SSB of the tiled sample (see the top): false when a check fails.
bool run_ssb(const Dataset& ds, const std::string& small, const detector::DiskFit& fit);

bool run_with_basis(const std::string& path, const std::string& backend, std::size_t check_rows, bool ssb,
                    const std::string& small) {
  io::LoadOptions o;
  o.backend = backend;
  o.representation = "encoded";
  o.radial_basis = "on";
  // The viewer's display bin (what auto picks when the conservative estimate fits: asked here so it is built). The
  // plan reads the file's metadata and chunk index (a child process's parse, then cached for this process): timed
  // apart and added to the load's time below, which then finds it cached.
  const double tp = bench::now_s();
  const io::FileInfo first = io::inspect(path);  // the child's parse and its transfer (then cached)
  const double inspect_s = bench::now_s() - tp;
  const Shape4D fs = io::plan_load(path, o).info.shape;
  const double plan_s = bench::now_s() - tp;
  const std::size_t db0 = display_scan_bin(fs.scan_rows, fs.scan_cols);
  o.scan_binned = db0 > 1 ? std::to_string(db0) : "off";
  const double t0 = bench::now_s();
  const Dataset ds = io::load(path, o);
  const double load_s = bench::now_s() - t0 + plan_s;
  std::printf("plan (metadata and chunk index: the child's parse and its transfer, or the cached inspect when the "
              "plain load ran first) %.1f ms of the load below: inspect %.1f ms (chunk index parse in the child %.1f "
              "ms), the rest of plan_load %.1f ms\n",
              plan_s * 1e3, inspect_s * 1e3, first.index_seconds * 1e3, (plan_s - inspect_s) * 1e3);
  {  // the inspect's pieces again in this process (not part of the load): parse, the wire's encode and decode
    const double a = bench::now_s();
    const io::FileInfo again = io::inspect_in_process(path);
    const double b = bench::now_s();
    const std::string wire = io::encode_file_info(again);
    const double c = bench::now_s();
    const io::FileInfo back = io::decode_file_info(wire, path);
    const double d = bench::now_s();
    // and a bare fork of this process (its CUDA context and mappings; the child exits at once) waited for
    const pid_t child = ::fork();
    if (child == 0) ::_exit(0);
    if (child > 0) ::waitpid(child, nullptr, 0);
    const double e = bench::now_s();
    std::printf("inspect pieces in this process: parse %.1f ms, wire encode %.1f ms (%.1f MB), decode %.1f ms; a bare "
                "fork + exit + wait %.1f ms\n",
                (b - a) * 1e3, (c - b) * 1e3, wire.size() / 1e6, (d - c) * 1e3, (e - d) * 1e3);
  }
  std::printf("load timing: %s\n", ds.provenance().parameters.value("timing", nlohmann::json()).dump().c_str());
  const Shape4D& s = ds.shape();
  const RadialBasis* b = ds.encoded()->radial_basis();
  if (!b) throw Error("no radial basis: " + ds.encoded()->radial_basis_report().dump());
  const nlohmann::json copy_report = ds.encoded()->scan_binned_report();
  std::printf("| load encoded + radial basis + scan-binned copy | %zux%zux%zux%zu | %.1f ms | resident %.3f GB + basis "
              "%.3f GB (%u boundaries, centre %.2f, %.2f) + copy %s |\n",
              s.scan_rows, s.scan_cols, s.det_rows, s.det_cols, load_s * 1e3, ds.resident_bytes() / 1e9,
              b->bytes() / 1e9, b->boundaries(), b->center_row(), b->center_col(), copy_report.dump().c_str());
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
  std::printf("BF (basis) stages: %s\n", stages_of([&] { bf = detector::bf(ds, r, c); }).c_str());
  ms = median_ms([&] { adf = detector::adf(ds, inner + 1e-9, outer, c); });
  std::printf("| ADF (%.0f..%.0f], basis | %.2f ms | %s |\n", inner, outer, ms, strategy(adf).c_str());
  ms = median_ms([&] { com = dpc::center_of_mass(ds); });
  std::printf("| CoM (both maps), basis | %.2f ms | %s |\n", ms,
              com.provenance.parameters.value("strategy", std::string("decode")).c_str());
  std::printf("CoM (basis) stages: %s\n", stages_of([&] { com = dpc::center_of_mass(ds); }).c_str());
  // The same answers where the previous one's memory is given back, as the service does once its body is made and
  // the Python module when the array is freed (core/result_memory.hpp): the result's pages are present.
  {
    const SumImage bf_fresh = bf;
    ms = median_ms([&] {
      recycle_result(std::move(bf));
      bf = detector::bf(ds, r, c);
    });
    const double adf_ms = median_ms([&] {
      recycle_result(std::move(adf));
      adf = detector::adf(ds, inner + 1e-9, outer, c);
    });
    const double com_ms = median_ms([&] {
      recycle_result(std::move(com.com_row));
      recycle_result(std::move(com.com_col));
      com = dpc::center_of_mass(ds);
    });
    std::printf("| BF / ADF / CoM, basis, the previous answer's memory given back | %.2f / %.2f / %.2f ms | BF %s |\n",
                ms, adf_ms, com_ms, bf.counts("bf").data == bf_fresh.counts("bf").data ? "equal" : "DIFFERS");
    std::printf("BF (basis, memory given back) stages: %s\n", stages_of([&] {
                  recycle_result(std::move(bf));
                  bf = detector::bf(ds, r, c);
                }).c_str());
  }
  ms = median_ms([&] {
    const dpc::DpcResult d = dpc::centered_dpc(dpc::center_of_mass(ds));
    dpc::idpc(d.dpc_row, d.dpc_col);
  });
  std::printf("| CoM -> DPC -> iDPC, basis | %.2f ms |\n", ms);
  const auto idpc_given_back = [&] {  // each image given back once used, as a Python user's arrays are freed
    dpc::ComResult cm = dpc::center_of_mass(ds);
    dpc::DpcResult d = dpc::centered_dpc(cm);
    recycle_result(std::move(cm.com_row));
    recycle_result(std::move(cm.com_col));
    Image<float> phi = dpc::idpc(d.dpc_row, d.dpc_col);
    recycle_result(std::move(d.dpc_row));
    recycle_result(std::move(d.dpc_col));
    recycle_result(std::move(phi));
  };
  ms = median_ms(idpc_given_back);
  std::printf("| CoM -> DPC -> iDPC, basis, each image's memory given back | %.2f ms |\n", ms);
  std::printf("CoM -> DPC -> iDPC (memory given back) stages: %s\n", stages_of(idpc_given_back).c_str());
  // The same chain as dpc::run_pipeline runs it (Python's dpc.pipeline): the CoM maps stay on the GPU,
  // the field is made and integrated there while the host makes the DPC and field it returns; nothing goes up.
  {
    dpc::PipelineParams pp;
    pp.idpc = true;
    pp.rotation = dpc::Rotation{-15.0, false};  // as the viewer's rotation slider gives it
    const auto pipeline_given_back = [&] {
      dpc::PipelineResult pr = dpc::run_pipeline(ds, pp);
      for (Image<float>* im : {&pr.com.com_row, &pr.com.com_col, &pr.dpc.dpc_row, &pr.dpc.dpc_col, &pr.field_row,
                               &pr.field_col, &*pr.idpc})
        recycle_result(std::move(*im));
    };
    ms = median_ms(pipeline_given_back);
    // (its stages before the check below, whose results are not given back: after it the next answer's memory is fresh)
    std::printf("run_pipeline (memory given back) stages: %s\n", stages_of(pipeline_given_back).c_str());
    bool same = false;  // the steps one by one (the field uploaded): the same potential, bit for bit
    {
      const dpc::PipelineResult pr = dpc::run_pipeline(ds, pp);
      const auto [fr, fc] = dpc::rotate_field(dpc::centered_dpc(dpc::center_of_mass(ds)), -15.0, false);
      same = pr.idpc->data == dpc::idpc(fr, fc).data;
    }
    std::printf("| CoM -> DPC -> rotation -> iDPC, dpc::run_pipeline (field made on the GPU), memory given back | %.2f ms | iDPC %s the steps' |\n",
                ms, same ? "equal to" : "DIFFERS from");
  }
  // What the service's /idpc does at full resolution after its first answer (remote/routes_dpc.cpp): the held
  // calibrated field integrated (sent up each time), or the held centred DPC integrated with the rotation the request
  // gives (IdpcOptions::rotation_deg: turned on the GPU as it is padded); bit for bit the field rotated first.
  {
    const dpc::DpcResult held = dpc::centered_dpc(dpc::center_of_mass(ds));
    const auto field = dpc::rotate_field(held, -15.0, false);
    const double held_ms = median_ms([&] { recycle_result(dpc::idpc(field.first, field.second)); });
    dpc::IdpcOptions turn;
    turn.rotation_deg = -15.0;
    const double given_ms = median_ms([&] { recycle_result(dpc::idpc(held.dpc_row, held.dpc_col, turn)); });
    const bool same = dpc::idpc(held.dpc_row, held.dpc_col, turn).data == dpc::idpc(field.first, field.second).data;
    std::printf("| iDPC of the held field (the service once calibrated) / of the held DPC rotated as asked, memory given back | %.2f / %.2f ms | rotated as asked %s the held field's |\n",
                held_ms, given_ms, same ? "equal to" : "DIFFERS from");
  }
  const detector::Center oc{c.first + 0.37 * r, c.second - 0.29 * r};
  ms = median_ms([&] { off = detector::bf(ds, r, oc); });
  std::printf("| BF off-centre (%.2f, %.2f), exact decode | %.2f ms | %s |\n", oc.first, oc.second, ms,
              strategy(off).c_str());
  // The display answers of the service's scan_bin: exact sums over b x b positions, binned on the GPU (at most
  // 1024 values a side; equal to the full answer binned on the host).
  bool binned_ok = true;
  for (std::size_t b = 2; s.scan_rows / b >= 256 && s.scan_rows % b == 0 && s.scan_cols % b == 0; b *= 2) {
    if (s.scan_rows / b > 1024) continue;
    SumImage bb, ab;
    ms = median_ms([&] { bb = detector::bf(ds, r, c, b); });
    const double adf_ms = median_ms([&] { ab = detector::adf(ds, inner + 1e-9, outer, c, b); });
    const bool same = bb.counts("bf").data == bin_scan_sums(bf.counts("bf").data, s.scan_rows, s.scan_cols, b) &&
                      ab.counts("adf").data == bin_scan_sums(adf.counts("adf").data, s.scan_rows, s.scan_cols, b);
    binned_ok = binned_ok && same;
    dpc::ComOptions co;
    co.scan_bin = b;
    dpc::ComResult cb;
    const double com_ms = median_ms([&] { cb = dpc::center_of_mass(ds, co); });
    std::printf("| BF / ADF / CoM scan-binned %zux%zu (%zux%zu), basis | %.2f / %.2f / %.2f ms | %s, CoM %s; BF, ADF %s |\n",
                b, b, s.scan_rows / b, s.scan_cols / b, ms, adf_ms, com_ms, strategy(bb).c_str(),
                cb.provenance.parameters.value("strategy", std::string("decode")).c_str(),
                same ? "equal to the full answer binned" : "DIFFER");
    // What the viewer's iDPC asks for on a large scan: the binned CoM, centred, integrated.
    const double idpc_ms = median_ms([&] {
      const dpc::DpcResult d = dpc::centered_dpc(dpc::center_of_mass(ds, co));
      dpc::idpc(d.dpc_row, d.dpc_col);
    });
    std::printf("| CoM -> DPC -> iDPC scan-binned %zux%zu (%zux%zu), basis | %.2f ms |\n", b, b, s.scan_rows / b,
                s.scan_cols / b, idpc_ms);
  }
  // Any detector at the display bin: the scan-binned copy (exact b x b sums, decoded like the full resident).
  const std::size_t db = display_scan_bin(s.scan_rows, s.scan_cols);
  const auto copy = ds.encoded()->scan_binned(db);
  SumImage off_b, adf_ob;
  dpc::ComResult com_ob;
  dpc::ComOptions off_co;
  off_co.scan_bin = db;
  {
    const detector::Mask m = detector::disk(s.det_rows, s.det_cols, oc.first, oc.second, outer);
    off_co.mask = {m.weights.begin(), m.weights.end()};
  }
  if (copy) {
    ms = median_ms([&] { off_b = detector::bf(ds, r, oc, db); });
    const double adf_ms = median_ms([&] { adf_ob = detector::adf(ds, inner + 1e-9, outer, oc, db); });
    const double com_ms = median_ms([&] { com_ob = dpc::center_of_mass(ds, off_co); });
    const double idpc_ms = median_ms([&] {
      const dpc::DpcResult d = dpc::centered_dpc(dpc::center_of_mass(ds, off_co));
      dpc::idpc(d.dpc_row, d.dpc_col);
    });
    const bool same = off_b.counts("bf").data == bin_scan_sums(off.counts("bf").data, s.scan_rows, s.scan_cols, db);
    binned_ok = binned_ok && same;
    std::printf("| BF / ADF / CoM off-centre (%.2f, %.2f) scan-binned %zux%zu (%zux%zu), copy | %.2f / %.2f / %.2f ms "
                "| %s, CoM %s; BF %s |\n",
                oc.first, oc.second, db, db, s.scan_rows / db, s.scan_cols / db, ms, adf_ms, com_ms,
                strategy(off_b).c_str(), com_ob.provenance.parameters.value("strategy", std::string("decode")).c_str(),
                same ? "equal to the exact full answer binned" : "DIFFERS");
    std::printf("| CoM (off-centre disk) -> DPC -> iDPC scan-binned %zux%zu, copy | %.2f ms |\n", db, db, idpc_ms);
    std::printf("BF off-centre (copy) stages: %s\n", stages_of([&] { off_b = detector::bf(ds, r, oc, db); }).c_str());
    std::printf("CoM off-centre (copy) stages: %s\n", stages_of([&] { com_ob = dpc::center_of_mass(ds, off_co); }).c_str());
  } else if (db > 1) {
    std::printf("| scan-binned copy | not built: %s |\n", copy_report.dump().c_str());
  }
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
  if (copy && r0 % db == 0 && check_rows % db == 0) {  // the copy's rows of the band, against its binned reference
    const std::size_t bc = s.scan_cols / db;
    check("BF off-centre scan-binned (copy)",
          band_equal(off_b.counts("bf").data, detector::bf(band, r, oc, db).counts("bf").data, r0 / db, bc));
    check("ADF off-centre scan-binned (copy)",
          band_equal(adf_ob.counts("adf").data, detector::adf(band, inner + 1e-9, outer, oc, db).counts("adf").data,
                     r0 / db, bc));
    const dpc::ComResult cob = dpc::center_of_mass(band, off_co);
    check("CoM off-centre scan-binned (copy)", band_equal(com_ob.com_row.data, cob.com_row.data, r0 / db, bc) &&
                                                   band_equal(com_ob.com_col.data, cob.com_col.data, r0 / db, bc));
  }
  ok = ok && binned_ok;
  std::fflush(stdout);
  if (ssb) ok = run_ssb(ds, small, fit) && ok;
  return ok;
}

// Max |phase difference| allowed between two tiles of the tiled sample's phase: the data are exactly periodic, so
// the spectrum lives on every factor-th Q and the image repeats up to float32 FFT rounding (~1e-6 of |phase|).
constexpr double kTileTol = 1e-3;  // radians

bool run_ssb(const Dataset& ds, const std::string& small, const detector::DiskFit& fit) {
  const Shape4D& s = ds.shape();
  ssb::SsbParams p;
  std::size_t period_r = 0, period_c = 0;  // the small file's scan (the tiling period), when known
  try {
    nlohmann::json md = ds.metadata();
    if (!small.empty()) {
      const io::FileInfo fi = io::plan_load(small, {}).info;
      period_r = fi.shape.scan_rows;
      period_c = fi.shape.scan_cols;
      if (!md.contains("calibration") || !md["calibration"].contains("semiangle_mrad")) md["calibration"] = fi.calibration;
    }
    p = ssb::params_from_metadata(md);
  } catch (const InvalidArgument& e) {
    std::printf("| SSB | skipped: %s |\n", e.what());
    return true;
  }
  p.disk_center = std::pair<double, double>{fit.center_row, fit.center_col};  // the fit above, not redone per prepare
  bool ok = true;
  const double c1 = p.aberrations.C1;
  for (std::size_t bin : {4, 2}) {
    double t0 = bench::now_s();
    std::unique_ptr<ssb::Reconstructor> rec;
    try {
      rec = std::make_unique<ssb::Reconstructor>(ds, p, bin);
    } catch (const std::exception& e) {
      std::printf("| SSB prepare, bin %zu | failed: %s |\n", bin, e.what());
      ok = false;
      continue;
    }
    const double prepare_ms = (bench::now_s() - t0) * 1e3;
    t0 = bench::now_s();
    ssb::SsbResult first = rec->at(p.aberrations);
    const double first_ms = (bench::now_s() - t0) * 1e3;
    const nlohmann::json& pr = first.provenance.parameters;
    const nlohmann::json e = pr.value("engine", nlohmann::json::object());
    const auto gb = [&](const char* key) { return double(e.value(key, std::size_t(0))) / 1e9; };
    char held[160] = "host memory (cpu)";
    if (e.contains("g_resident_bytes"))
      std::snprintf(held, sizeof held, "resident %.2f GB, regathered per move %.2f GB", gb("g_resident_bytes"),
                    gb("g_streamed_bytes"));
    std::printf("| SSB prepare (G(K, Q)), bin %zu | %.1f ms | %zu K groups of %zu BF pixels; G %.2f GB: %s; "
                "weighting %s |\n",
                bin, prepare_ms, std::size_t(pr.value("k_groups", 0)), std::size_t(pr.value("bf_pixels", 0)),
                gb("g_cube_bytes"), held, pr.value("weighting", std::string("?")).c_str());
    std::printf("SSB engine, bin %zu: %s\n", bin, e.dump().c_str());
    std::printf("| SSB first image (C2R plan made), bin %zu | %.1f ms |\n", bin, first_ms);
    std::vector<double> moves;
    for (double dc : {-40.0, 25.0, 60.0}) {
      ssb::Aberrations a = p.aberrations;
      a.C1 = c1 + dc;
      t0 = bench::now_s();
      const ssb::SsbResult r = rec->at(a);
      moves.push_back((bench::now_s() - t0) * 1e3);
    }
    std::printf("| SSB C1 slider (3 new C1, median), bin %zu | %.2f ms |\n", bin, bench::median(moves));
    // The coarse slider of a large scan (Reconstructor::at with scan_bin: the low-pass answer on the binned grid,
    // what the viewer asks for when it shows the scan binned): at most 1024 values a side.
    for (std::size_t sb = 2; s.scan_rows / sb >= 256 && s.scan_rows % sb == 0 && s.scan_cols % sb == 0; sb *= 2) {
      if (s.scan_rows / sb > 1024) continue;
      std::vector<double> binned;
      for (double dc : {-40.0, 25.0, 60.0}) {
        ssb::Aberrations a = p.aberrations;
        a.C1 = c1 + dc;
        t0 = bench::now_s();
        const ssb::SsbResult r = rec->at(a, sb);
        binned.push_back((bench::now_s() - t0) * 1e3);
      }
      std::printf("| SSB C1 slider scan-binned %zux%zu (%zux%zu, low-pass), bin %zu | %.2f ms |\n", sb, sb,
                  s.scan_rows / sb, s.scan_cols / sb, bin, bench::median(binned));
    }
    const double idpc_ms = median_ms([&] {
      const dpc::DpcResult d = dpc::centered_dpc(dpc::center_of_mass(ds));
      dpc::idpc(d.dpc_row, d.dpc_col);
    });
    std::printf("| CoM -> DPC -> iDPC with the SSB G held, bin %zu | %.2f ms |\n", bin, idpc_ms);
    // Sanity: finite, not constant, periodic with the tiling (first tile against the last whole one, interior).
    const std::vector<float>& ph = first.phase.data;
    double mean = 0, var = 0;
    bool finite = true;
    for (float v : ph) {
      finite = finite && std::isfinite(v);
      mean += v;
    }
    mean /= double(ph.size());
    for (float v : ph) var += (v - mean) * (v - mean);
    const double sd = std::sqrt(var / double(ph.size()));
    std::string tiles = "period unknown (no --tile-from)";
    bool periodic = true;
    if (period_r > 0 && period_c > 0 && s.scan_rows >= 2 * period_r && s.scan_cols >= 2 * period_c) {
      const std::size_t dr = (s.scan_rows / period_r - 1) * period_r, dc = (s.scan_cols / period_c - 1) * period_c;
      const std::size_t m = std::min({period_r, period_c, std::size_t(16)}) / 4;  // margin from the tile edges
      double worst = 0;
      for (std::size_t r = m; r + m < period_r; ++r)
        for (std::size_t c = m; c + m < period_c; ++c)
          worst = std::max(worst, std::abs(double(ph[r * s.scan_cols + c]) -
                                           double(ph[(r + dr) * s.scan_cols + c + dc])));
      periodic = worst <= kTileTol;
      char buf[160];
      std::snprintf(buf, sizeof buf, "tile (0, 0) vs (%zu, %zu): max |diff| %.2e rad (tol %.0e)", dr, dc, worst,
                    kTileTol);
      tiles = buf;
    }
    const bool good = finite && sd > 0 && periodic;
    std::printf("| SSB phase check, bin %zu | %s | finite %s, std %.4f rad, %s |\n", bin, good ? "ok" : "FAILED",
                finite ? "yes" : "NO", sd, tiles.c_str());
    std::fflush(stdout);
    ok = ok && good;
  }
  return ok;
}

}  // namespace

static int bench_main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: bench_scale BIG.h5 [--tile-from SMALL.h5 --factor K] [--check-rows N] [--backend cuda|cpu] [--basis-only] [--no-ssb|--ssb]\n");
    return 2;
  }
  const std::string path = argv[1];
  std::string small;
  std::size_t factor = 4, check_rows = 16;
  std::string backend = "cuda";
  bool basis_only = false;
  int ssb = -1;  // -1: by the scan size, 0: --no-ssb, 1: --ssb
  const auto is_flag = [](const char* a) {
    return !std::strcmp(a, "--basis-only") || !std::strcmp(a, "--no-ssb") || !std::strcmp(a, "--ssb");
  };
  for (int i = 2; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--basis-only")) basis_only = true;
    if (!std::strcmp(argv[i], "--no-ssb")) ssb = 0;
    if (!std::strcmp(argv[i], "--ssb")) ssb = 1;
  }
  for (int i = 2; i + 1 < argc; i += 2) {
    if (is_flag(argv[i])) {
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
    if (backend == "cuda") {  // the CUDA context first (made by the first call that needs it), not in a load's time
      const double t = bench::now_s();
      io::free_memory_bytes(Backend::cuda);
      std::printf("CUDA context made in %.1f ms, before the timed loads\n", (bench::now_s() - t) * 1e3);
    }
    bool ok = true;
    if (!basis_only) ok = run_without_basis(path, backend, check_rows);
    if (ssb < 0) {
      const Shape4D sh = io::plan_load(path, {}).info.shape;
      ssb = sh.scan_rows * sh.scan_cols <= std::size_t(2048) * 2048;
      if (!ssb) std::printf("| SSB | not run at this scan by default (pass --ssb) |\n");
    }
    ok = run_with_basis(path, backend, check_rows, ssb == 1, small) && ok;
    return ok ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_scale: %s\n", e.what());
    return 1;
  }
}

QGPU_BENCH_MAIN("usage: bench_scale BIG.h5 [--tile-from SMALL.h5 --factor K] [--check-rows N] [--backend cuda|cpu] [--basis-only] [--no-ssb|--ssb]")
