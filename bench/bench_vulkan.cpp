// The vulkan backend beside cuda (issue 34) in one run: the same file loaded dense on each backend, then load, BF,
// ADF, CoM, centred DPC + iDPC and a BF render, host timer around the public API call with the result copied back
// (median of 5 after 1 warm-up; the load once). Each backend's answers are checked against the first backend's:
// BF/ADF/CoM exact, iDPC within 1e-5 relative (L2). The adapter and driver of the vulkan backend are printed first.
// usage: bench_vulkan FILE [--backends cuda,vulkan]
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
  std::vector<float> com_row, com_col, phi;
};

}  // namespace

static int bench_main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: bench_vulkan FILE [--backends cuda,vulkan]\n");
    return 2;
  }
  std::string list = "cuda,vulkan";
  for (int i = 2; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], "--backends") == 0) list = argv[i + 1];
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
    if (!have_first) {
      first = {bf.data, adf.data, com.com_row.data, com.com_col.data, phi.data};
      have_first = true;
    }
    const std::string ref = " to " + backends.front();
    row("BF (fitted disk)", b, bf_ms, bf.data == first.bf ? "equal" + ref : "DIFFERS" + ref);
    row("ADF 1.2R..3R", b, adf_ms, adf.data == first.adf ? "equal" + ref : "DIFFERS" + ref);
    row("CoM (both maps)", b, com_ms,
        com.com_row.data == first.com_row && com.com_col.data == first.com_col ? "equal" + ref : "DIFFERS" + ref);
    const double rel = relative_l2(phi.data, first.phi);
    char buf[96];
    std::snprintf(buf, sizeof buf, "%s %.2e rel. L2%s", rel <= 1e-5 ? "within 1e-5:" : "DIFFERS:", rel, ref.c_str());
    row("iDPC (mirror padding)", b, idpc_ms, buf);
    row("render BF (viridis, 1..99 %)", b, render_ms, "");
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

QGPU_BENCH_MAIN("usage: bench_vulkan FILE [--backends cuda,vulkan]")
