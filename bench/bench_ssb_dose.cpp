// SSB truth correlation per dose and weighting (CPU reference; correlations, not speeds, so real on any machine).
// usage: bench_ssb_dose [SCAN [DET]]   (default 64 64: scan SCAN x SCAN, detector DET x DET)
// Simulator (io/sample): 300 keV, 20 mrad, BF disk radius DET/6 px, scan step 2 simulation px, uint32 counts; for
// each C1 in {0, 100} A and dose in {300, 1e3, 1e4, 1e5, 3e5, 1e6} counts per frame, seed = 1 + index of the dose
// (C1 = 0) or 101 + index (C1 = 100). Reconstructs with the true C1 and each weighting; prints the Pearson correlation
// of the phase with the simulator's object phase at the scan positions.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "io/sample/sample.hpp"
#include "resident/dataset.hpp"
#include "ssb/ssb.hpp"
#include "bench_guard.hpp"

using namespace qgpu;

namespace {

double pearson(const std::vector<float>& a, const std::vector<float>& b) {
  double ma = 0, mb = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    ma += a[i];
    mb += b[i];
  }
  ma /= double(a.size());
  mb /= double(b.size());
  double sab = 0, saa = 0, sbb = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    sab += (a[i] - ma) * (b[i] - mb);
    saa += (a[i] - ma) * (a[i] - ma);
    sbb += (b[i] - mb) * (b[i] - mb);
  }
  return sab / std::sqrt(saa * sbb);
}

Dataset simulate(const sample::SampleSpec& s) {
  const sample::Sampling sm = sample::sampling(s);
  HostArray4D h;
  h.shape = {s.scan_rows, s.scan_cols, s.det_rows, s.det_cols};
  h.dtype = s.dtype;
  h.bytes.resize(h.shape.elements() * dtype_size(s.dtype));
  sample::simulate_frames(s, 0, s.scan_rows * s.scan_cols, h.bytes.data());
  const nlohmann::json md = {{"calibration",
                              {{"energy_kev", s.energy_kev},
                               {"semiangle_mrad", s.semiangle_mrad},
                               {"scan_step_angstrom", sm.scan_step_angstrom},
                               {"detector_mrad_per_pixel", sm.mrad_per_pixel},
                               {"defocus_angstrom", s.defocus_angstrom}}}};
  Provenance p;
  p.operation = "bench.simulate";
  p.backend = "cpu";
  return Dataset::from_host(std::move(h), md, p);
}

}  // namespace

static int bench_main(int argc, char** argv) {
  const std::size_t scan = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 64;
  const std::size_t det = argc > 2 ? std::strtoul(argv[2], nullptr, 10) : 64;
  const std::vector<double> doses{300, 1e3, 1e4, 1e5, 3e5, 1e6};
  const std::vector<ssb::Weighting> ws{ssb::Weighting::amplitude, ssb::Weighting::phase, ssb::Weighting::wiener,
                                       ssb::Weighting::automatic};
  std::printf("scan %zux%zu, detector %zux%zu, uint32, 300 keV, 20 mrad, CPU reference\n\n", scan, scan, det, det);
  std::printf("| C1 (A) | counts/frame | seed | amplitude (ours before) | phase (py4DSTEM Gamma/|Gamma|) | wiener | "
              "auto (chose) |\n|---|---|---|---|---|---|---|\n");
  for (double c1 : {0.0, 100.0})
    for (std::size_t d = 0; d < doses.size(); ++d) {
      sample::SampleSpec s;
      s.scan_rows = s.scan_cols = scan;
      s.det_rows = s.det_cols = det;
      s.dtype = DType::u32;
      s.defocus_angstrom = c1;
      s.dose_per_frame = doses[d];
      s.seed = (c1 == 0 ? 1 : 101) + d;
      const Dataset ds = simulate(s);
      const std::vector<float> truth = sample::object_phase_at_scan(s);
      ssb::SsbParams p = ssb::params_from_metadata(ds);
      std::printf("| %.0f | %.0e | %llu |", c1, doses[d], static_cast<unsigned long long>(s.seed));
      for (ssb::Weighting w : ws) {
        p.weighting = w;
        const ssb::SsbResult r = ssb::reconstruct(ds, p);
        std::printf(" %.3f", pearson(r.phase.data, truth));
        if (w == ssb::Weighting::automatic)
          std::printf(" (%s)", r.provenance.parameters.at("weighting").get<std::string>().c_str());
        std::printf(" |");
      }
      std::printf("\n");
      std::fflush(stdout);
    }
  return 0;
}

QGPU_BENCH_MAIN("usage: bench_ssb_dose [SCAN [DET]]   (default 64 64: scan SCAN x SCAN, detector DET x DET)")
