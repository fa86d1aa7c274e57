// ssb::Reconstructor (G(K, Q) kept, aberrations varied: the viewer's live defocus slider) against preview and
// reconstruct computed afresh, on the CPU reference and (skipped without a usable GPU) on the CUDA engine.
#include <gtest/gtest.h>

#include <fftw3.h>

#include <cmath>
#include <complex>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/numbers.hpp"
#include "ssb/ssb.hpp"
#include "ssb_fixtures.hpp"
#include "support/scoped_env.hpp"
#include "support/cuda_required.hpp"

namespace qgpu::ssb {
namespace {

using test::ScopedEnv;

void expect_same(const SsbResult& a, const SsbResult& b) {
  EXPECT_EQ(a.phase.data, b.phase.data);
  EXPECT_EQ(a.amplitude.data, b.amplitude.data);
  EXPECT_EQ(a.provenance.operation, b.provenance.operation);
  EXPECT_EQ(a.provenance.parameters.at("aberrations"), b.provenance.parameters.at("aberrations"));
}

void check_defocus_sweep(const Dataset& ds) {
  const SsbParams p = testing::true_params(100);
  for (std::size_t bin : {1, 4}) {
    Reconstructor r(ds, p, bin);
    EXPECT_EQ(r.detector_bin(), bin);
    for (double c1 : {100.0, -250.0, 0.0, 100.0}) {
      SsbParams q = p;
      q.aberrations.C1 = c1;
      const SsbResult fresh = bin == 1 ? reconstruct(ds, q) : preview(ds, q, bin);
      SCOPED_TRACE("bin " + std::to_string(bin) + ", C1 " + std::to_string(c1));
      expect_same(r.at(q.aberrations), fresh);
    }
  }
}

TEST(SsbReconstructor, EqualsFreshReconstructionsOnTheCpu) { check_defocus_sweep(testing::dataset(100)); }

TEST(SsbReconstructor, EqualsFreshReconstructionsOnCuda) {
  QGPU_REQUIRE_CUDA();
  check_defocus_sweep(testing::dataset(100).to_device());
}

TEST(SsbReconstructor, RefusesBinZeroAndNonFiniteAberrations) {
  EXPECT_THROW(Reconstructor(testing::dataset(0), testing::true_params(0), 0), InvalidArgument);
  Reconstructor r(testing::dataset(0), testing::true_params(0), 4);
  Aberrations bad;
  bad.C1 = std::nan("");
  EXPECT_THROW(r.at(bad), InvalidArgument);
}

// The fixture's sample at 1000 counts per frame, where the weightings differ most (simulated once).
const Dataset& low_dose() {
  static const Dataset d = [] {
    sample::SampleSpec low = testing::spec(100);
    low.dose_per_frame = 1000;
    low.seed = 7;
    return testing::simulate(low);
  }();
  return d;
}

// The scan-binned answer (Reconstructor::at with scan_bin b): the low-pass of the full reconstruction at every b-th
// position. Independently here: phi = tan(phase) of the full answer (object 1 + i phi, ssb.hpp), its FFT kept at
// the binned grid's frequencies (the same signed indices; that grid's Nyquist row / column and DC dropped), inverted
// on the binned grid (unnormalised, divided by the full size): atan of it is the binned phase. Exact relation for
// the amplitude and phase weightings (the same num / den per Q); Wiener estimates its ring power from the kept Q.
std::vector<double> low_pass_phase(const SsbResult& full, std::size_t b) {
  const std::size_t nr = full.phase.rows, nc = full.phase.cols, br = nr / b, bc = nc / b;
  std::vector<std::complex<double>> f(nr * nc), g(br * bc);
  for (std::size_t i = 0; i < nr * nc; ++i) f[i] = std::tan(double(full.phase.data[i]));
  fftw_plan fwd = fftw_plan_dft_2d(int(nr), int(nc), reinterpret_cast<fftw_complex*>(f.data()),
                                   reinterpret_cast<fftw_complex*>(f.data()), FFTW_FORWARD, FFTW_ESTIMATE);
  fftw_execute(fwd);
  fftw_destroy_plan(fwd);
  const auto full_index = [](std::size_t i, std::size_t n_small, std::size_t n) {
    const long long s = signed_frequency(i, n_small);
    return s >= 0 ? std::size_t(s) : std::size_t(static_cast<long long>(n) + s);
  };
  for (std::size_t i = 0; i < br; ++i)
    for (std::size_t j = 0; j < bc; ++j) {
      const bool dropped = (i == 0 && j == 0) || (br % 2 == 0 && i == br / 2) || (bc % 2 == 0 && j == bc / 2);
      g[i * bc + j] = dropped ? 0.0 : f[full_index(i, br, nr) * nc + full_index(j, bc, nc)] / double(nr * nc);
    }
  fftw_plan inv = fftw_plan_dft_2d(int(br), int(bc), reinterpret_cast<fftw_complex*>(g.data()),
                                   reinterpret_cast<fftw_complex*>(g.data()), FFTW_BACKWARD, FFTW_ESTIMATE);
  fftw_execute(inv);
  fftw_destroy_plan(inv);
  std::vector<double> out(br * bc);
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = std::atan(g[i].real());
  return out;
}

TEST(SsbReconstructor, ScanBinnedIsTheLowPassOfTheFullOnTheCpu) {
  const Dataset& ds = testing::dataset(100);  // 40 x 48 scan: bins 2, 4 and 8 (a 5 x 6 grid: odd rows)
  for (Weighting w : {Weighting::amplitude, Weighting::phase}) {
    SsbParams p = testing::true_params(100);
    p.weighting = w;
    Reconstructor r(ds, p, 2);
    const SsbResult full = r.at(p.aberrations);
    double peak = 0;
    for (float v : full.phase.data) peak = std::max(peak, std::abs(double(v)));
    ASSERT_GT(peak, 1e-3);
    for (std::size_t b : {2, 4, 8}) {
      SCOPED_TRACE(weighting_name(w) + ", scan bin " + std::to_string(b));
      const SsbResult got = r.at(p.aberrations, b);
      ASSERT_EQ(got.phase.rows, 40 / b);
      ASSERT_EQ(got.phase.cols, 48 / b);
      EXPECT_EQ(got.provenance.parameters.at("scan_bin"), b);
      const std::vector<double> want = low_pass_phase(full, b);
      for (std::size_t i = 0; i < want.size(); ++i) {
        ASSERT_NEAR(got.phase.data[i], want[i], 1e-5 * peak + 1e-7) << i;
        ASSERT_NEAR(got.amplitude.data[i], std::hypot(1.0, std::tan(double(got.phase.data[i]))), 1e-6) << i;
      }
    }
  }
  Reconstructor r(ds, testing::true_params(100), 4);
  EXPECT_THROW(r.at(testing::true_params(100).aberrations, 3), InvalidArgument);  // 40 % 3
  EXPECT_THROW(r.at(testing::true_params(100).aberrations, 0), InvalidArgument);
}

// Every weighting on the GPU engine through one Reconstructor (the Wiener rings and buffers are made at the first
// evaluation and kept; phase and amplitude come from one kernel): each step equals a fresh reconstruction on the
// GPU and, within the CUDA tolerance (test_ssb_cuda.cpp: 1e-4 relative L2), the CPU Reconstructor; a return to
// an earlier defocus is bit for bit the earlier answer; so are the scan-binned answers (Reconstructor::at's
// scan_bin) against the CPU's.
TEST(SsbReconstructor, KeptWeightingsOnCudaEqualFreshAndCpu) {
  QGPU_REQUIRE_CUDA();
  const Dataset& host = low_dose();
  const Dataset dev = host.to_device();
  for (Weighting w : {Weighting::amplitude, Weighting::phase, Weighting::wiener}) {
    SsbParams p = params_from_metadata(host);
    p.weighting = w;
    Reconstructor g(dev, p, 2), c(host, p, 2);
    std::vector<float> first_phase, first_amplitude;
    for (double c1 : {100.0, -250.0, 100.0}) {
      SCOPED_TRACE(weighting_name(w) + ", C1 " + std::to_string(c1));
      SsbParams q = p;
      q.aberrations.C1 = c1;
      const SsbResult rg = g.at(q.aberrations), rc = c.at(q.aberrations);
      expect_same(rg, preview(dev, q, 2));
      EXPECT_LE(testing::relative_l2(rg, rc), 1e-4);
      for (std::size_t i = 0; i < rg.phase.data.size(); ++i)  // amplitude = |1 + i tan(phase)| (ssb.hpp)
        ASSERT_NEAR(rg.amplitude.data[i], std::hypot(1.0, std::tan(double(rg.phase.data[i]))), 1e-5) << i;
      if (first_phase.empty()) {
        first_phase = rg.phase.data;
        first_amplitude = rg.amplitude.data;
      } else if (c1 == 100.0) {
        EXPECT_EQ(rg.phase.data, first_phase);
        EXPECT_EQ(rg.amplitude.data, first_amplitude);
      }
    }
    // scan-binned answers against the CPU's, every bin, and the full one unchanged between them (Wiener rings per grid)
    for (std::size_t b : {2, 4, 8, 1, 2}) {
      SCOPED_TRACE(weighting_name(w) + ", scan bin " + std::to_string(b));
      SsbParams q = p;
      q.aberrations.C1 = 100.0;
      const SsbResult rg = g.at(q.aberrations, b), rc = c.at(q.aberrations, b);
      ASSERT_EQ(rg.phase.data.size(), rc.phase.data.size());
      EXPECT_LE(testing::relative_l2(rg, rc), 1e-4);
      if (b == 1) EXPECT_EQ(rg.phase.data, first_phase);
    }
  }
}


// G beyond the device budget at a large scan: the engine keeps the low-pass part of every group at the viewer's scan
// bin (here set to 2 by QGPU_SSB_LOW_PASS_BIN), so the scan-binned answers at its multiples need no regather of the
// streamed groups. Each such answer is bit for bit the one a resident G gives; the full answer still
// streams (within the streamed G's float tolerance of test_ssb_cuda.cpp).
TEST(SsbReconstructor, KeptLowPassGAnswersScanBinnedLikeAResidentG) {
  QGPU_REQUIRE_CUDA();
  const Dataset& host = low_dose();
  const Dataset dev = host.to_device();
  for (Weighting w : {Weighting::amplitude, Weighting::phase, Weighting::wiener}) {
    SCOPED_TRACE(weighting_name(w));
    SsbParams p = params_from_metadata(host);
    p.weighting = w;
    p.aberrations.C1 = 100.0;
    Reconstructor resident(dev, p, 2);
    const SsbResult r1 = resident.at(p.aberrations);
    const nlohmann::json& re = r1.provenance.parameters.at("engine");
    ASSERT_EQ(re.at("streamed_groups").get<std::size_t>(), 0u);
    EXPECT_EQ(re.at("g_low_pass_bin").get<std::size_t>(), 0u);  // all resident: none kept
    const std::size_t cube = re.at("g_cube_bytes").get<std::size_t>();
    // The budget: 0.6 of G. The low-pass part at bin 2 (20 x 13 of 40 x 25 frequencies, 0.26 of G) takes at most
    // half of it; part of the rest resident, part streamed.
    std::unique_ptr<Reconstructor> kept;
    {
      const ScopedEnv budget("QGPU_SSB_DEVICE_BUDGET_BYTES", std::to_string(cube * 6 / 10));
      const ScopedEnv bin("QGPU_SSB_LOW_PASS_BIN", "2");
      kept = std::make_unique<Reconstructor>(dev, p, 2);
    }
    for (std::size_t b : {2, 4, 8, 1, 2}) {
      SCOPED_TRACE("scan bin " + std::to_string(b));
      const SsbResult a = kept->at(p.aberrations, b), want = resident.at(p.aberrations, b);
      const nlohmann::json& e = a.provenance.parameters.at("engine");
      EXPECT_EQ(e.at("g_low_pass_bin").get<std::size_t>(), 2u);
      EXPECT_EQ(e.at("g_low_pass_bytes").get<std::size_t>(), e.at("groups").get<std::size_t>() * 20 * 13 * 8);
      EXPECT_GT(e.at("streamed_groups").get<std::size_t>(), 0u);
      EXPECT_GT(e.at("resident_groups").get<std::size_t>(), 0u);
      ASSERT_EQ(a.phase.data.size(), want.phase.data.size());
      if (b % 2 == 0) {
        EXPECT_EQ(a.phase.data, want.phase.data);
        EXPECT_EQ(a.amplitude.data, want.amplitude.data);
      } else {
        EXPECT_LE(testing::relative_l2(a, want), 1e-5);
      }
    }
  }
}

}  // namespace
}  // namespace qgpu::ssb
