// The encoded resident against the dense one across the dose (issue 33 item 4): for each dose (mean counts per frame,
// the sample writer's --dose) a simulated sample is written (256x256 scan x 192x192 uint16; --small: 32x32 x 64x64,
// to check the bench on the cpu backend before a GPU run), then per encoder policy (format.hpp: Policy; set through
// QGPU_ENCODED_POLICY for the load): the dense and encoded loads (median of --reps after one warm-up each, dense and
// encoded alternating), resident bytes and the dense/resident ratio, the BF and CoM products on both (host timer,
// medians of --reps, dense and encoded called in turn after 2 warm-ups each; results checked equal to dense), which
// models the streams took, where the encoded BF's time goes, and the loads' and the encoder's stage times.
// usage: bench_encoded_dose [--backend cuda|cpu] [--small] [--scan N] [--det N] [--dir DIR] [--doses 1e3,4e3,...]
//                           [--policies compact,fast] [--reps N] [--keep]
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "bench_common.hpp"
#include "detector/disk_fit.hpp"
#include "detector/virtual_detector.hpp"
#include "dpc/com.hpp"
#include "io/hdf5/load.hpp"
#include "io/sample/sample.hpp"
#include "resident/encoded/encoded_resident.hpp"
#include "resident/encoded/layout.hpp"
#include "resident/encoded/stream_codec.hpp"
#include "bench_guard.hpp"

using namespace qgpu;

namespace {

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

// Share of the streams per model (zero, constant, sparse, raw, rANS, rANS with an alphabet beyond the lockstep
// decoder's) and of the payload bytes per model.
std::string model_mix(const EncodedResident& e) {
  double streams[6] = {0, 0, 0, 0, 0, 0}, bytes[6] = {0, 0, 0, 0, 0, 0}, total = 0, total_bytes = 0;
  for (std::size_t t = 0; t < e.tiles().size(); ++t) {
    const encoded::cpu::HostTile h = e.tile_bytes(t);
    for (std::size_t p = 0; p + 1 < h.dir.size(); ++p) {
      const std::uint32_t size = h.dir[p + 1] - h.dir[p];
      const std::uint8_t* s = h.payload.data() + h.dir[p];
      int m = size ? s[0] : 0;
      if (m > 4) m = 0;
      if (m == encoded::kRans && encoded::rans_alphabet(s, size) > encoded::kFastMaxAlphabet) m = 5;
      streams[m] += 1;
      bytes[m] += size;
      total += 1;
      total_bytes += size;
    }
  }
  const char* names[6] = {"zero", "const", "sparse", "raw", "rans", "rans>30"};
  std::string out = "streams";
  char b[64];
  for (int m = 0; m < 6; ++m) {
    std::snprintf(b, sizeof b, " %s %.1f%%", names[m], 100 * streams[m] / (total > 0 ? total : 1));
    out += b;
  }
  out += "; bytes";
  for (int m = 2; m < 6; ++m) {
    std::snprintf(b, sizeof b, " %s %.1f%%", names[m], 100 * bytes[m] / (total_bytes > 0 ? total_bytes : 1));
    out += b;
  }
  return out;
}

// Median host times of a and b in ms, called in turn (a, b, a, b, ...) after 2 warm-ups each.
template <class A, class B>
std::pair<double, double> alternating_medians(A&& a, B&& b, int reps) {
  for (int i = 0; i < 2; ++i) {
    a();
    b();
  }
  std::vector<double> ta, tb;
  for (int i = 0; i < reps; ++i) {
    double t0 = bench::now_s();
    a();
    ta.push_back((bench::now_s() - t0) * 1e3);
    t0 = bench::now_s();
    b();
    tb.push_back((bench::now_s() - t0) * 1e3);
  }
  return {bench::median(ta), bench::median(tb)};
}

}  // namespace

static int bench_main(int argc, char** argv) {
  std::string backend = "cuda", dir = "/tmp/qgpu-dose", doses_arg = "1e3,4e3,2e4,1e5,2e5",
              policies_arg = "compact,fast";
  bool small = false, keep = false;
  int reps = 5;
  std::size_t scan_arg = 0, det_arg = 0;  // 0: 256 and 192 (--small: 32 and 64)
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--backend") backend = next();
    else if (a == "--small") small = true;
    else if (a == "--keep") keep = true;
    else if (a == "--dir") dir = next();
    else if (a == "--doses") doses_arg = next();
    else if (a == "--policies") policies_arg = next();
    else if (a == "--reps") reps = std::atoi(next().c_str());
    else if (a == "--scan") scan_arg = std::strtoul(next().c_str(), nullptr, 10);
    else if (a == "--det") det_arg = std::strtoul(next().c_str(), nullptr, 10);
    else {
      std::fprintf(stderr, "usage: bench_encoded_dose [--backend cuda|cpu] [--small] [--scan N] [--det N] [--dir DIR] "
                           "[--doses a,b,...] "
                           "[--policies compact,fast] [--reps N] [--keep]\n");
      return 2;
    }
  }
  if (reps < 1) reps = 1;
  std::vector<encoded::Policy> policies;
  for (const std::string& p : split(policies_arg)) policies.push_back(encoded::parse_policy(p));
  std::filesystem::create_directories(dir);
  const std::size_t scan = scan_arg ? scan_arg : small ? 32 : 256, det = det_arg ? det_arg : small ? 64 : 192;
  std::printf("backend %s, %zux%zu scan x %zux%zu detector uint16, reps %d\n", backend.c_str(), scan, scan, det, det,
              reps);
  std::printf("| dose | policy | dense load | encoded load | resident (dense/resident) | BF dense | BF encoded | "
              "CoM dense | CoM encoded | equal |\n|---|---|---|---|---|---|---|---|---|---|\n");
  std::vector<std::string> mixes;
  for (const std::string& dose_s : split(doses_arg)) {
    const double dose = std::atof(dose_s.c_str());
    sample::SampleSpec spec;
    spec.scan_rows = spec.scan_cols = scan;
    spec.det_rows = spec.det_cols = det;
    spec.dtype = DType::u16;
    spec.dose_per_frame = dose;
    const std::string path =
        dir + "/dose_" + dose_s + "_" + std::to_string(scan) + "_" + std::to_string(det) + ".h5";
    if (!std::filesystem::exists(path)) {
      const double t0 = bench::now_s();
      sample::write_sample(path, spec);
      std::fprintf(stderr, "written %s in %.1f s (%.2f GB on disk)\n", path.c_str(), bench::now_s() - t0,
                   std::filesystem::file_size(path) / 1e9);
    }
    const auto load = [&](const std::string& representation, encoded::Policy policy) {
      ::setenv("QGPU_ENCODED_POLICY", encoded::policy_name(policy), 1);
      io::LoadOptions o;
      o.backend = backend;
      o.representation = representation;
      return io::load(path, o);
    };
    for (const encoded::Policy policy : policies) {
      Dataset dense, enc;
      std::vector<double> dense_t, enc_t;
      (void)load("dense", policy);
      (void)load("encoded", policy);
      for (int r = 0; r < reps; ++r) {
        double t0 = bench::now_s();
        dense = load("dense", policy);
        dense_t.push_back((bench::now_s() - t0) * 1e3);
        dense = Dataset{};
        t0 = bench::now_s();
        enc = load("encoded", policy);
        enc_t.push_back((bench::now_s() - t0) * 1e3);
      }
      dense = load("dense", policy);
      ::unsetenv("QGPU_ENCODED_POLICY");
      const EncodedResident* e = enc.encoded();
      if (!e || e->layout().policy != policy) {
        std::fprintf(stderr, "the encoded load did not take policy %s\n", encoded::policy_name(policy));
        return 1;
      }
      const auto bf_d = detector::bf(dense), bf_e = detector::bf(enc);
      const auto com_d = dpc::center_of_mass(dense), com_e = dpc::center_of_mass(enc);
      const bool equal = bf_d.counts("bf").data == bf_e.counts("bf").data && com_d.com_row.data == com_e.com_row.data &&
                         com_d.com_col.data == com_e.com_col.data;
      // Dense and encoded alternate (2 warm-ups each, then medians of reps), so that a drift of the host (another
      // process, the clock) weighs on both sides of a ratio alike.
      const auto [bfd, bfe] = alternating_medians([&] { (void)detector::bf(dense); }, [&] { (void)detector::bf(enc); }, reps);
      const auto [comd, come] = alternating_medians([&] { (void)dpc::center_of_mass(dense); },
                                                    [&] { (void)dpc::center_of_mass(enc); }, reps);
      const double dl = bench::median(dense_t), el = bench::median(enc_t);
      std::printf("| %s | %s | %.1f ms | %.1f ms (%.2fx) | %.1f MB (%.2fx) | %.3f ms | %.3f ms (%.2fx) | %.3f ms | "
                  "%.3f ms (%.2fx) | %s |\n",
                  dose_s.c_str(), encoded::policy_name(policy), dl, el, el / dl, e->resident_bytes() / 1e6,
                  double(e->dense_bytes()) / e->resident_bytes(), bfd, bfe, bfe / bfd, comd, come, come / comd,
                  equal ? "yes" : "NO");
      std::fflush(stdout);
      // Where the encoded BF's time goes: the disk fit, the sums over the disk's streams or as totals minus the
      // others' (the plan takes the cheaper by its cost model), and one pixel's sum (the fixed cost of a query).
      const detector::DiskFit fit = detector::fit_bf_disk(enc);
      std::vector<std::uint32_t> disk, ones, rest;
      for (std::uint32_t p = 0; p < det * det; ++p)
        (std::hypot(double(p / det) - fit.center_row, double(p % det) - fit.center_col) <= fit.radius ? disk : rest)
            .push_back(p);
      ones.assign(disk.size(), 1);
      const double fit_ms = bench::host_median_ms([&] { (void)detector::fit_bf_disk(enc); }, 2, reps),
                   disk_ms = bench::host_median_ms([&] { (void)e->masked_sum(disk, ones); }, 2, reps),
                   rest_ms = bench::host_median_ms([&] { (void)e->complement_sum(rest, 1); }, 2, reps),
                   one_ms = bench::host_median_ms([&] { (void)e->masked_sum({disk[0]}, {1}); }, 2, reps);
      std::fprintf(stderr, "  %s BF stages: dense %s; encoded %s\n", dose_s.c_str(),
                   bench::stage_medians([&] { (void)detector::bf(dense); }, reps).c_str(),
                   bench::stage_medians([&] { (void)detector::bf(enc); }, reps).c_str());
      char line[256];
      std::snprintf(line, sizeof line,
                    "; BF parts: disk fit %.3f ms, masked_sum over the %zu disk pixels %.3f ms, complement_sum over "
                    "the other %zu %.3f ms, one pixel %.3f ms",
                    fit_ms, disk.size(), disk_ms, rest.size(), rest_ms, one_ms);
      mixes.push_back(dose_s + " " + encoded::policy_name(policy) + ": " + model_mix(*e) + "; BF strategy " +
                      bf_e.provenance().parameters.value("strategy", std::string("?")) + line);
      // The last loads' stages (the loader's timing) and the encoder's (GPU).
      mixes.push_back("    dense load " + dense.provenance().parameters.value("timing", nlohmann::json()).dump());
      mixes.push_back("    encoded load " + enc.provenance().parameters.value("timing", nlohmann::json()).dump());
      mixes.push_back("    encoder stages " + e->encoder_stages());
    }
    if (!keep) std::filesystem::remove(path);
  }
  for (const std::string& m : mixes) std::printf("  %s\n", m.c_str());
  return 0;
}

QGPU_BENCH_MAIN("usage: bench_encoded_dose [--backend cuda|cpu] [--small] [--scan N] [--det N] [--dir DIR] [--doses 1e3,4e3,...]")
