// The vulkan backend beside cuda (issue 34) in one run: the same file loaded dense on each backend, then load, BF,
// ADF, CoM, centred DPC + iDPC, a BF render and SSB, host timer around the public API call with the result copied
// back (median of 5 after 1 warm-up; the load and the SSB preparation once). SSB (calibration from the file's
// metadata, disk centre at the detector centre as bench_ssb): the Reconstructor's preparation (the K set and G(K, Q)
// of every BF pixel), a warm reconstruction at the file's aberrations, and a detector-bin-4 preview (preparation
// included). Each backend's answers are checked against the first backend's: BF/ADF/CoM exact, iDPC within 1e-5
// relative (L2), the SSB phase within 1e-4 relative (L2; both float32 engines against each other). The adapter and
// driver of the vulkan backend are printed first.
// usage: bench_vulkan FILE [--backends cuda,vulkan] [--no-ssb]
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <sstream>

#include "bench_common.hpp"
#include "detector/virtual_detector.hpp"
#include "device/device.hpp"
#include "display/display.hpp"
#include "dpc/com.hpp"
#include "dpc/idpc.hpp"
#include "io/hdf5/load.hpp"
#include "ssb/ssb.hpp"
#include "bench_guard.hpp"

using namespace qgpu;

namespace {

double median_ms(const std::function<void()>& f) { return bench::host_median_ms(f, 1, 5); }

double relative_l2(const std::vector<float>& a, const std::vector<float>& b) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < a.size() && i < b.size(); ++i) {
    num += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
    den += double(b[i]) * b[i];
  }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

struct Answers {
  std::vector<std::uint64_t> bf, adf;
  std::vector<float> com_row, com_col, phi, ssb, preview;
};

}  // namespace

static int bench_main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: bench_vulkan FILE [--backends cuda,vulkan] [--no-ssb]\n");
    return 2;
  }
  std::string list = "cuda,vulkan";
  bool with_ssb = true;
  for (int i = 2; i < argc; ++i) {
    if (std::strcmp(argv[i], "--backends") == 0 && i + 1 < argc) list = argv[i + 1];
    if (std::strcmp(argv[i], "--no-ssb") == 0) with_ssb = false;
  }
  std::vector<std::string> backends;
  {
    std::stringstream ss(list);
    for (std::string b; std::getline(ss, b, ',');)
      if (!b.empty()) backends.push_back(b);
  }
  const DeviceReport& vr = vulkan_report();
  std::printf("vulkan adapter: %s\n", vr.vulkan_available
                                         ? (vr.vulkan_name + " (" + vr.vulkan_type + "), driver " + vr.vulkan_driver +
                                            ", Vulkan " + vr.vulkan_api).c_str()
                                         : ("none: " + vr.vulkan_reason).c_str());
  std::printf("| step | backend | time | check |\n| --- | --- | --- | --- |\n");
  std::map<std::string, std::map<std::string, double>> ms;  // step -> backend -> ms
  Answers first;
  bool have_first = false;
  int failures = 0;
  const auto row = [&](const char* step, const std::string& b, double t, const std::string& check) {
    ms[step][b] = t;
    std::printf("| %s | %s | %.3f ms | %s |\n", step, b.c_str(), t, check.c_str());
    if (check.find("DIFFERS") != std::string::npos) ++failures;
    std::fflush(stdout);
  };
  for (const std::string& b : backends) try {
    io::LoadOptions o;
    o.backend = b;
    o.representation = "dense";
    const double t0 = bench::now_s();
    const Dataset ds = io::load(argv[1], o);
    const std::string decode = ds.provenance().parameters.value("decode", "");
    row("load (dense)", b, (bench::now_s() - t0) * 1e3,
        ds.provenance().representation + ", " + std::to_string(ds.resident_bytes() / 1000000) + " MB" +
            (decode.find("compute shader") != std::string::npos ? ", shader decode"
             : decode.empty()                                    ? ""
                                                                 : ", host decode: " + decode));
    const detector::DiskFit fit = detector::fit_bf_disk(ds);
    const detector::Center c{fit.center_row, fit.center_col};
    Image<std::uint64_t> bf, adf;
    const double bf_ms = median_ms([&] { bf = detector::bf(ds, fit.radius, c); });
    const double adf_ms = median_ms([&] { adf = detector::adf(ds, 1.2 * fit.radius, 3 * fit.radius, c); });
    dpc::ComResult com;
    const double com_ms = median_ms([&] { com = dpc::center_of_mass(ds); });
    const dpc::DpcResult d = dpc::centered_dpc(com);
    Image<float> phi;
    const double idpc_ms = median_ms([&] { phi = dpc::idpc(d.dpc_row, d.dpc_col); });
    Image<float> bf_float;
    bf_float.rows = bf.rows;
    bf_float.cols = bf.cols;
    bf_float.data.assign(bf.data.begin(), bf.data.end());
    bf_float.provenance = bf.provenance;
    display::Rgba png;
    const double render_ms = median_ms([&] { png = display::render(bf_float, display::DisplayOptions{}); });
    // SSB: prepare once (G of every BF pixel), then warm reconstructions; a bin-4 preview with its preparation
    ssb::SsbResult ssb_r, preview_r;
    double prepare_ms = 0, ssb_ms = 0, preview_ms = 0;
    std::string engine;
    if (with_ssb) {
      ssb::SsbParams sp = ssb::params_from_metadata(ds);
      sp.disk_center = std::pair<double, double>{ds.shape().det_rows / 2.0, ds.shape().det_cols / 2.0};
      const double p0 = bench::now_s();
      ssb::Reconstructor rec(ds, sp, 1);
      prepare_ms = (bench::now_s() - p0) * 1e3;
      ssb_ms = median_ms([&] { ssb_r = rec.at(sp.aberrations); });
      engine = ssb_r.provenance.parameters.value("engine", nlohmann::json()).dump();
      preview_ms = median_ms([&] { preview_r = ssb::preview(ds, sp, 4); });
    }
    if (!have_first) {
      first = {bf.data, adf.data, com.com_row.data, com.com_col.data, phi.data, ssb_r.phase.data, preview_r.phase.data};
      have_first = true;
    }
    const std::string ref = " to " + backends.front();
    row("BF (fitted disk)", b, bf_ms, bf.data == first.bf ? "equal" + ref : "DIFFERS" + ref);
    row("ADF 1.2R..3R", b, adf_ms, adf.data == first.adf ? "equal" + ref : "DIFFERS" + ref);
    row("CoM (both maps)", b, com_ms,
        com.com_row.data == first.com_row && com.com_col.data == first.com_col ? "equal" + ref : "DIFFERS" + ref);
    const double rel = relative_l2(phi.data, first.phi);
    char buf[128];
    std::snprintf(buf, sizeof buf, "%s %.2e rel. L2%s", rel <= 1e-5 ? "within 1e-5:" : "DIFFERS:", rel, ref.c_str());
    row("iDPC (mirror padding)", b, idpc_ms, buf);
    row("render BF (viridis, 1..99 %)", b, render_ms, "");
    if (with_ssb) {
      row("SSB prepare (K set + G, bin 1)", b, prepare_ms, engine);
      const double rs = relative_l2(ssb_r.phase.data, first.ssb), rp = relative_l2(preview_r.phase.data, first.preview);
      std::snprintf(buf, sizeof buf, "%s %.2e rel. L2%s", rs <= 1e-4 ? "within 1e-4:" : "DIFFERS:", rs, ref.c_str());
      row("SSB reconstruct (warm, bin 1)", b, ssb_ms, buf);
      std::snprintf(buf, sizeof buf, "%s %.2e rel. L2%s", rp <= 1e-4 ? "within 1e-4:" : "DIFFERS:", rp, ref.c_str());
      row("SSB preview (bin 4, prepared per call)", b, preview_ms, buf);
    }
  } catch (const std::exception& e) {
    std::printf("| %s | %s | not run | %s |\n", "all", b.c_str(), e.what());
    ++failures;
  }
  if (backends.size() == 2) {
    std::printf("\n| step | %s / %s |\n| --- | --- |\n", backends[1].c_str(), backends[0].c_str());
    for (const auto& [step, t] : ms)
      if (t.count(backends[0]) && t.count(backends[1]))
        std::printf("| %s | %.2fx |\n", step.c_str(), t.at(backends[1]) / t.at(backends[0]));
  }
  return failures ? 1 : 0;
}

QGPU_BENCH_MAIN("usage: bench_vulkan FILE [--backends cuda,vulkan] [--no-ssb]")
