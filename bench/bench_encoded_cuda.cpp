// The encoded-v1 resident on the GPU: encode time from the dense GPU-resident dataset (appended in batches of whole
// scan rows, as the loader would), resident bytes against dense and the file, and warm query kernel times (CUDA
// events, median of 10 after 3 warm-ups), each answer checked against the dense resident: BF, ADF and the CoM sums,
// the whole CoM product and the whole BF product, mean pattern, one frame, a 64x64 scan-region read; then the load of
// the file dense, encoded and encoded without the decoder's live-group marks (QGPU_LIVE_GROUPS=0), alternating, median
// of 7 each; and dense and encoded three in a row each, median of the last 2; both without and with a 0.2 s pause
// after the dataset before was dropped: all the issue-8 figures of one file in one run. The encoder's stage times (statistics + encode kernel, tile offsets, compaction, host waits and
// allocations) are printed for the encode from dense and the encoded loads (the stream priorities were compared
// here until 2026-12-03: docs/history/benchmarks-2026-12.md, fifth session). The other masked-sum kernels and the first encoder once measured here were
// removed after the 2026-12-03 H200 run (docs/runs/2026-12-03/s3c/bench_encoded_cuda.log, docs/history/benchmarks-2026-12.md).
// usage: bench_encoded_cuda FILE [scan det dtype]
#include <cuda_runtime.h>

#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <chrono>
#include <filesystem>
#include <map>
#include <thread>

#include "bench_dataset.hpp"
#include "cuda_timer.hpp"
#include "detector/cuda/masked_sum_cuda.hpp"
#include "detector/virtual_detector.hpp"
#include "dpc/com.hpp"
#include "device/cuda/cuda_check.hpp"
#include "resident/encoded/cuda/encoded_cuda.hpp"
#include "resident/encoded/encoded_resident.hpp"
#include "bench_guard.hpp"

using namespace qgpu;
using qgpu::bench::time_ms;

namespace {

// Pixel offsets with r0 <= distance from the detector centre < r1, weight 1.
void annulus(const Shape4D& s, double r0, double r1, std::vector<std::uint32_t>& px, std::vector<std::uint32_t>& w) {
  const double cr = (s.det_rows - 1) / 2.0, cc = (s.det_cols - 1) / 2.0;
  for (std::size_t r = 0; r < s.det_rows; ++r)
    for (std::size_t c = 0; c < s.det_cols; ++c) {
      const double d = std::hypot(r - cr, c - cc);
      if (d >= r0 && d < r1) {
        px.push_back(static_cast<std::uint32_t>(r * s.det_cols + c));
        w.push_back(1);
      }
    }
}

// The detector pixels not in px (each listed once), in pixel order.
std::vector<std::uint32_t> others(std::size_t frame_pixels, const std::vector<std::uint32_t>& px) {
  std::vector<char> in(frame_pixels, 0);
  for (std::uint32_t p : px) in[p] = 1;
  std::vector<std::uint32_t> rest;
  for (std::uint32_t p = 0; p < frame_pixels; ++p)
    if (!in[p]) rest.push_back(p);
  return rest;
}

}  // namespace

static int bench_main(int argc, char** argv) {
  const Dataset ds = bench::load_benchmark_dataset(argc, argv, "bench_encoded_cuda");
  const Shape4D& s = ds.shape();
  const std::size_t fb = s.frame_pixels() * dtype_size(ds.dtype());
  const auto* dense = ds.device_buffer().as<std::uint8_t>();

  // Encode from the dense GPU resident in batches of whole scan rows (512 MiB as before, and 2 GiB as the loader
  // stages them).
  const auto encode_all = [&](std::size_t batch_bytes, double* seconds) {
    EncodedResident r(s, ds.dtype(), Backend::cuda);
    QGPU_CUDA(cudaDeviceSynchronize());
    const double a = bench::now_s();
    const std::size_t rows_per_batch = std::max<std::size_t>(1, batch_bytes / (fb * s.scan_cols));
    for (std::size_t r0 = 0; r0 < s.scan_rows; r0 += rows_per_batch) {
      const std::size_t rows = std::min(rows_per_batch, s.scan_rows - r0);
      r.append(dense + r0 * s.scan_cols * fb, rows * s.scan_cols);
    }
    QGPU_CUDA(cudaDeviceSynchronize());
    *seconds = bench::now_s() - a;
    return r;
  };
  const double file = double(std::filesystem::file_size(argv[1]));
  double encode_s = 0, warm_s = 0, big_s = 0;
  (void)encode_all(std::size_t{512} << 20, &warm_s);  // first use: module load, allocations
  EncodedResident enc = encode_all(std::size_t{512} << 20, &encode_s);
  std::printf("encode %.3f s (%.1f GB/s dense; first run %.3f s); resident %.3f GB, dense %.3f GB (%.1fx), file %.3f GB "
              "(%.2f of the file)\n",
              encode_s, enc.dense_bytes() / encode_s / 1e9, warm_s, enc.resident_bytes() / 1e9, enc.dense_bytes() / 1e9,
              double(enc.dense_bytes()) / enc.resident_bytes(), file / 1e9, enc.resident_bytes() / file);
  std::printf("  encoder stages (512 MiB batches): %s\n", enc.encoder_stages().c_str());
  {
    const EncodedResident big = encode_all(std::size_t{2} << 30, &big_s);
    std::printf("encode in 2 GiB batches (as the loader) %.3f s (%.1f GB/s dense)\n  encoder stages: %s\n", big_s,
                big.dense_bytes() / big_s / 1e9, big.encoder_stages().c_str());
  }
  const encoded::Layout& l = enc.layout();
  DeviceBuffer out(l.frames * 8);
  // The lists as the queries pass them to the kernel: in the resident's decode order (densest pixels first).
  const auto reorder = [&](std::vector<std::uint32_t>& px, std::vector<std::vector<std::uint32_t>*> ws) {
    const std::vector<std::uint32_t> order = enc.decode_order(px);
    const auto apply = [&](std::vector<std::uint32_t>& v) {
      std::vector<std::uint32_t> o(v.size());
      for (std::size_t i = 0; i < v.size(); ++i) o[i] = v[order[i]];
      v.swap(o);
    };
    for (auto* w : ws) apply(*w);
    apply(px);
  };
  const auto run_sum = [&](const char* name, std::vector<std::uint32_t> px, std::vector<std::uint32_t> w) {
    reorder(px, {&w});
    DeviceBuffer d_px(px.size() * 4), d_w(w.size() * 4);
    d_px.upload(px.data(), d_px.bytes());
    d_w.upload(w.data(), d_w.bytes());
    detector::SumPlan plan;
    plan.offsets = px;
    plan.weights = w;
    const std::vector<std::uint64_t> want = detector::cuda::masked_sum(ds, plan).counts("bench").data;
    const double ms = time_ms([&] {
      encoded::cuda::masked_sum(l, enc.device_tiles(), d_px.as<std::uint32_t>(), d_w.as<std::uint32_t>(), px.size(),
                                out.as<std::uint64_t>(), nullptr);
    }, 10);
    std::vector<std::uint64_t> got(l.frames);
    out.download(got.data(), got.size() * 8);
    std::printf("| encoded %s (%zu pixels) | %.3f ms | equal to dense: %s |\n", name, px.size(), ms,
                got == want ? "yes" : "NO");
  };
  std::vector<std::uint32_t> px, w;
  annulus(s, 0, s.det_rows / 6.0, px, w);
  run_sum("BF disk r<det/6", px, w);
  {  // The same BF as the stored frame totals minus the pixels outside the disk (what the bf product chooses when
     // those streams are cheaper: detector/encoded/masked_sum_encoded.hpp).
    detector::SumPlan plan;
    plan.offsets = px;
    plan.weights = w;
    const std::vector<std::uint64_t> want = detector::cuda::masked_sum(ds, plan).counts("bench").data;
    std::vector<std::uint32_t> rest = others(l.frame_pixels, px), ones(rest.size(), 1);
    for (const char* order : {"row-major order", "decode order"}) {
      if (order[0] == 'd') reorder(rest, {&ones});
      DeviceBuffer d_px(rest.size() * 4), d_w(rest.size() * 4);
      d_px.upload(rest.data(), d_px.bytes());
      d_w.upload(ones.data(), d_w.bytes());
      const double ms = time_ms([&] {
        encoded::cuda::complement_sum(l, enc.device_tiles(), enc.device_frame_totals(), d_px.as<std::uint32_t>(),
                                      d_w.as<std::uint32_t>(), rest.size(), 1, out.as<std::uint64_t>(), nullptr);
      }, 10);
      std::vector<std::uint64_t> got(l.frames);
      out.download(got.data(), got.size() * 8);
      std::printf("| encoded BF disk r<det/6 as totals minus the %zu pixels outside (%s) | %.3f ms | equal to dense: "
                  "%s |\n", rest.size(), order, ms, got == want ? "yes" : "NO");
    }
  }
  px.clear();
  w.clear();
  annulus(s, 40, 90, px, w);
  run_sum("ADF annulus 40..90", px, w);

  DeviceBuffer frame(fb);
  const double frame_ms = time_ms([&] { encoded::cuda::decode_frame(l, enc.device_tiles(), l.frames / 2 + 77, frame.data()); }, 10);
  std::printf("| encoded one frame | %.3f ms |\n", frame_ms);
  const std::size_t side = std::min<std::size_t>(64, std::min(s.scan_rows, s.scan_cols));
  const encoded::cpu::RegionRequest req{s.scan_cols, s.scan_rows / 3, s.scan_cols / 3, side, side,
                                        s.det_cols,  0,              0,              s.det_rows, s.det_cols};
  DeviceBuffer region(side * side * fb);
  const double region_ms = time_ms([&] { encoded::cuda::decode_region(l, enc.device_tiles(), req, region.data()); }, 10);
  const HostArray4D ref = ds.read({req.row0, req.col0, side, side});
  std::vector<std::uint8_t> got(region.bytes());
  region.download(got.data(), got.size());
  std::printf("| encoded %zux%zu scan-region read (full frames) | %.3f ms | equal to dense: %s |\n", side, side,
              region_ms, got == ref.bytes ? "yes" : "NO");

  // CoM: the kernel the encoded CoM runs (weights det_row, det_col over every pixel, one decode), then the product.
  {
    std::vector<std::uint32_t> all, wr, wc;
    for (std::uint32_t p = 0; p < l.frame_pixels; ++p) {
      all.push_back(p);
      wr.push_back(p / static_cast<std::uint32_t>(s.det_cols));
      wc.push_back(p % static_cast<std::uint32_t>(s.det_cols));
    }
    reorder(all, {&wr, &wc});
    std::vector<std::uint32_t> w2 = wr;
    w2.insert(w2.end(), wc.begin(), wc.end());
    DeviceBuffer d_px(all.size() * 4), d_w(w2.size() * 4), out2(2 * l.frames * 8);
    d_px.upload(all.data(), d_px.bytes());
    d_w.upload(w2.data(), d_w.bytes());
    detector::SumPlan pr, pc;
    pr.offsets = pc.offsets = all;
    pr.weights = wr;
    pc.weights = wc;
    const auto dr = detector::cuda::masked_sum(ds, pr).counts("bench").data,
               dc = detector::cuda::masked_sum(ds, pc).counts("bench").data;
    const double ms = time_ms([&] {
      encoded::cuda::masked_sums(l, enc.device_tiles(), d_px.as<std::uint32_t>(), d_w.as<std::uint32_t>(),
                                 all.size(), 2, out2.as<std::uint64_t>(), nullptr);
    }, 10);
    std::vector<std::uint64_t> got(2 * l.frames);
    out2.download(got.data(), got.size() * 8);
    const bool equal = std::equal(dr.begin(), dr.end(), got.begin()) &&
                       std::equal(dc.begin(), dc.end(), got.begin() + static_cast<std::ptrdiff_t>(l.frames));
    std::printf("| encoded CoM sums (det_row, det_col weights, %zu pixels, decode order) | %.3f ms | equal to dense: %s |\n",
                all.size(), ms, equal ? "yes" : "NO");
  }

  // Products through the public API on a dataset loaded encoded (host results: includes the download).
  // Loads of the file through the public API. `settle_ms`: a pause after the dataset loaded before was dropped.
  // Freeing a large dense resident costs the load that follows at once milliseconds on the H200, so that in a
  // rotation without the pause every load after a dense one pays for it (docs/history/benchmarks-2026-12.md);
  // the rotation is run without and with a 0.2 s pause.
  int settle_ms = 0;
  // Per representation: the load's own stage times (provenance "timing"): index (host, HDF5 chunk indexes), release
  // (freeing its buffers) and the rest, to tell them from the pipeline.
  std::map<std::string, std::vector<double>> index_ms, release_ms, rest_ms;
  const auto load_once = [&](const std::string& representation, Dataset* keep) {
    io::LoadOptions o;
    o.backend = "cuda";
    o.representation = representation;
    double ms = 0;
    {
      const double a = bench::now_s();
      Dataset d = io::load(argv[1], o);
      QGPU_CUDA(cudaDeviceSynchronize());
      ms = (bench::now_s() - a) * 1e3;
      const auto& t = d.provenance().parameters.at("timing");
      const std::string key = representation + (std::getenv("QGPU_LIVE_GROUPS") ? " unmarked" : "");
      index_ms[key].push_back(t.value("index_s", 0.0) * 1e3);
      release_ms[key].push_back(t.value("release_s", 0.0) * 1e3);
      rest_ms[key].push_back(ms - index_ms[key].back() - release_ms[key].back());
      if (keep) *keep = std::move(d);
    }
    QGPU_CUDA(cudaDeviceSynchronize());
    std::this_thread::sleep_for(std::chrono::milliseconds(settle_ms));
    return ms;
  };
  const auto load_ms = [&](const std::string& representation, Dataset* keep) {
    (void)load_once(representation, nullptr);  // warms the page cache and the CUDA context
    std::vector<double> t;
    for (int i = 0; i < 2; ++i) t.push_back(load_once(representation, i == 1 ? keep : nullptr));
    return bench::median(t);
  };
  // Dense and encoded loads alternate (7 each after one warm-up of each; medians), so that a drift of the machine
  // during the run affects both alike. A third load in the rotation: encoded with QGPU_LIVE_GROUPS=0 (the encoder
  // reads every group of 32 pixels, not only those the decoder marked).
  Dataset dse = ds, dse_all;
  const auto unmarked = [&](Dataset* keep) {
    ::setenv("QGPU_LIVE_GROUPS", "0", 1);
    const double ms = load_once("encoded", keep);
    ::unsetenv("QGPU_LIVE_GROUPS");
    return ms;
  };
  const auto range = [](const std::vector<double>& t) {
    char b[64];
    std::snprintf(b, sizeof b, "median of 7 (%.1f .. %.1f)", *std::min_element(t.begin(), t.end()),
                  *std::max_element(t.begin(), t.end()));
    return std::string(b);
  };
  for (const int pause : {0, 200}) {
    settle_ms = pause;
    index_ms.clear();
    release_ms.clear();
    rest_ms.clear();
    std::vector<double> dense_t, enc_t, all_t;
    (void)load_once("dense", nullptr);
    (void)load_once("encoded", nullptr);
    (void)unmarked(nullptr);
    for (int i = 0; i < 7; ++i) {
      dense_t.push_back(load_once("dense", nullptr));
      enc_t.push_back(load_once("encoded", i == 6 ? &dse : nullptr));
      all_t.push_back(unmarked(i == 6 ? &dse_all : nullptr));
    }
    const double enc_load = bench::median(enc_t), dense_load = bench::median(dense_t), all_load = bench::median(all_t);
    const std::string after = " (" + std::to_string(pause) + " ms after the last dataset was dropped)";
    std::printf("| load dense%s | %.1f ms | %s |\n| load encoded%s | %.1f ms | %.2fx the dense load | %s |\n"
                "| load encoded, QGPU_LIVE_GROUPS=0 (every group read)%s | %.1f ms | %.2fx the dense load | %s |\n",
                after.c_str(), dense_load, range(dense_t).c_str(), after.c_str(), enc_load, enc_load / dense_load,
                range(enc_t).c_str(), after.c_str(), all_load, all_load / dense_load, range(all_t).c_str());
    for (const auto& [key, v] : index_ms)
      std::printf("  %s loads: index (host) median %.1f ms, freeing the load's buffers %.1f ms, the rest median "
                  "%.1f ms\n", key.c_str(), bench::median(v), bench::median(release_ms[key]),
                  bench::median(rest_ms[key]));
    if (dse_all.encoded())
      std::printf("  encoder stages of the last encoded load, QGPU_LIVE_GROUPS=0: %s\n",
                  dse_all.encoded()->encoder_stages().c_str());
    // the same, each representation loaded three times in a row (the measurement of the sessions before)
    const double d3 = load_ms("dense", nullptr), e3 = load_ms("encoded", nullptr);
    std::printf("| load dense, then encoded, 3 in a row each (median of the last 2)%s | %.1f ms, %.1f ms | %.2fx |\n",
                after.c_str(), d3, e3, e3 / d3);
  }
  if (dse.encoded()) std::printf("  encoder stages of the last encoded load: %s\n", dse.encoded()->encoder_stages().c_str());
  const auto com_d = dpc::center_of_mass(ds);
  {
    const double com_ms = time_ms([&] { (void)dpc::center_of_mass(dse); }, 10);
    const auto com_e = dpc::center_of_mass(dse);
    std::printf("| encoded CoM (center_of_mass, whole product) | %.3f ms | equal to dense: %s |\n", com_ms,
                com_e.com_row.data == com_d.com_row.data && com_e.com_col.data == com_d.com_col.data ? "yes" : "NO");
  }
  {
    const Image<std::uint64_t> bf_d = detector::bf(ds);
    const double bf_ms = time_ms([&] { (void)detector::bf(dse); }, 10);
    const Image<std::uint64_t> bf_e = detector::bf(dse);
    std::printf("| encoded BF (bf, whole product) | %.3f ms | equal to dense: %s | strategy: %s |\n", bf_ms,
                bf_e.data == bf_d.data ? "yes" : "NO",
                bf_e.provenance.parameters.value("strategy", std::string("?")).c_str());
    // Where the product's time goes beyond the kernel: the disk fit, and the sums with host lists in and out.
    const double fit_ms = time_ms([&] { (void)detector::fit_bf_disk(dse); }, 10);
    const detector::DiskFit fit = detector::fit_bf_disk(dse);
    std::vector<std::uint32_t> px, w;
    const Shape4D& s = dse.shape();
    for (std::uint32_t p = 0; p < s.det_rows * s.det_cols; ++p)
      if (std::hypot(double(p / s.det_cols) - fit.center_row, double(p % s.det_cols) - fit.center_col) <= fit.radius) {
        px.push_back(p);
        w.push_back(1);
      }
    const double host_ms = time_ms([&] { (void)dse.encoded()->masked_sum(px, w); }, 10);
    const std::vector<std::uint32_t> rest = others(s.frame_pixels(), px);
    const double rest_ms = time_ms([&] { (void)dse.encoded()->complement_sum(rest, 1); }, 10);
    std::printf("|   of which fit_bf_disk | %.3f ms |\n|   EncodedResident::masked_sum (%zu pixels, host lists in, "
                "host sums out) | %.3f ms |\n|   EncodedResident::complement_sum (%zu pixels, host lists in, host "
                "sums out) | %.3f ms |\n", fit_ms, px.size(), host_ms, rest.size(), rest_ms);
  }
  const double mean_ms = time_ms([&] { (void)detector::mean_pattern(dse); }, 10);
  std::printf("| encoded mean pattern (mean_pattern, whole product) | %.3f ms | equal to dense: %s |\n", mean_ms,
              detector::mean_pattern(dse).data == detector::mean_pattern(ds).data ? "yes" : "NO");
  return 0;
}

QGPU_BENCH_MAIN("usage: bench_encoded_cuda FILE [scan det dtype]")
