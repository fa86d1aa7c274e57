// Parallax on the GPU-resident dataset (dense and encoded) against the CPU reference (skipped without a usable GPU).
//
// Tolerances: the CUDA engine keeps the virtual images and their spectra in float32 (cuFFT complex64), the reference
// transforms in float64 from the same float32 images. The correlation peaks are integer positions plus a parabola
// of values ~1e-6 relative apart, so the measured shifts agree to 0.02 px and the fitted C1 to 0.2 %; the upsampled
// image (float atomics, any order) to 1e-3 relative L2.
#include <gtest/gtest.h>

#include <cmath>

#include "parallax/parallax.hpp"
#include "parallax_fixtures.hpp"
#include "support/cuda_required.hpp"

namespace qgpu::parallax {
namespace {

double relative_l2(const std::vector<float>& a, const std::vector<float>& b) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    num += std::pow(double(a[i]) - double(b[i]), 2);
    den += double(b[i]) * double(b[i]);
  }
  return std::sqrt(num / den);
}

void expect_matches(const ParallaxResult& gpu, const ParallaxResult& cpu) {
  ASSERT_EQ(gpu.shift_row.size(), cpu.shift_row.size());
  for (std::size_t g = 0; g < cpu.shift_row.size(); ++g) {
    EXPECT_NEAR(gpu.shift_row[g], cpu.shift_row[g], 0.02) << g;
    EXPECT_NEAR(gpu.shift_col[g], cpu.shift_col[g], 0.02) << g;
  }
  EXPECT_NEAR(gpu.fit.C1, cpu.fit.C1, 2e-3 * std::abs(cpu.fit.C1));
  EXPECT_NEAR(gpu.fit.rotation_deg, cpu.fit.rotation_deg, 0.1);
  EXPECT_EQ(gpu.fit.transpose, cpu.fit.transpose);
  ASSERT_EQ(gpu.image.data.size(), cpu.image.data.size());
  EXPECT_LE(relative_l2(gpu.image.data, cpu.image.data), 1e-3);
  EXPECT_LE(relative_l2(gpu.bf.data, cpu.bf.data), 1e-4);  // small contrast: float rounding of v ~1e-7 absolute
  EXPECT_EQ(gpu.provenance.backend, "cuda");
}

TEST(ParallaxCuda, DenseMatchesTheCpuReference) {
  QGPU_REQUIRE_CUDA();
  const Dataset& host = testing::dataset(150);
  const Dataset dev = host.to_device();
  const ParallaxParams p = params_from_metadata(host);
  const ParallaxResult cpu = run(host, p), gpu = run(dev, p);
  expect_matches(gpu, cpu);
  EXPECT_NEAR(gpu.fit.C1, 150.0, 3.0);
}

TEST(ParallaxCuda, EncodedMatchesTheCpuReference) {
  QGPU_REQUIRE_CUDA();
  const Dataset& host = testing::dataset(150);
  const Dataset dev = host.to_device().to_encoded();
  ASSERT_EQ(dev.representation(), "encoded");
  const ParallaxParams p = params_from_metadata(host);
  expect_matches(run(dev, p), run(host, p));
}

// Binned groups (CSR groups of several pixels), the skewness sign path, measured shifts, upsample 3, odd scan.
TEST(ParallaxCuda, BinnedOddScanAndOptionsMatchTheCpuReference) {
  QGPU_REQUIRE_CUDA();
  sample::SampleSpec s = testing::spec(-120);
  s.scan_rows = 45;
  s.scan_cols = 51;
  const Dataset host = ssb::testing::simulate(s), dev = host.to_device();
  ParallaxParams p = params_from_metadata(host);
  p.detector_bin = 2;
  p.c1_sign_hint = 0;
  p.use_fitted_shifts = false;
  p.upsample = 3;
  expect_matches(run(dev, p), run(host, p));
}

}  // namespace
}  // namespace qgpu::parallax
