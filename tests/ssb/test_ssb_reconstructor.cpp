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

}  // namespace
}  // namespace qgpu::ssb
