// ssb::Reconstructor (G(K, Q) kept, aberrations varied: the viewer's live defocus slider) against preview and
// reconstruct computed afresh, on the CPU reference and (skipped without a usable GPU) on the CUDA engine.
#include <gtest/gtest.h>

#include <cmath>

#include "core/error.hpp"
#include "ssb/ssb.hpp"
#include "ssb_fixtures.hpp"
#include "support/cuda_required.hpp"

namespace qgpu::ssb {
namespace {

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

// Every weighting on the GPU engine through one Reconstructor (the Wiener rings and buffers are made at the first
// evaluation and kept; phase and amplitude come from one kernel): each step equals a fresh reconstruction on the
// GPU and, within the CUDA tolerance (test_ssb_cuda.cpp: 1e-4 relative L2), the CPU Reconstructor; a return to
// an earlier defocus is bit for bit the earlier answer.
TEST(SsbReconstructor, KeptWeightingsOnCudaEqualFreshAndCpu) {
  QGPU_REQUIRE_CUDA();
  sample::SampleSpec low = testing::spec(100);
  low.dose_per_frame = 1000;  // where the weightings differ most
  low.seed = 7;
  const Dataset host = testing::simulate(low);
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
  }
}

}  // namespace
}  // namespace qgpu::ssb
