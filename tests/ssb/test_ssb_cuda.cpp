// SSB on the GPU-resident dataset (cuda, vulkan) against the CPU reference (each backend skipped, with the reason,
// where it is unusable; vulkan runs on lavapipe in CI).
//
// Tolerances: the GPU engines work in float32 (cuFFT / VkFFT complex64, float sums over K of ~360 terms), the
// reference in float64. The object 1 + i phi has |phi| <~ 0.5, float32 rounding of G and of the sums is ~1e-6 relative, so
// the relative L2 of the complex objects is bounded by 1e-4 (and the phase by 1e-4 rad pointwise).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "ssb/ssb.hpp"
#include "ssb/ssb_internal.hpp"
#include "ssb_fixtures.hpp"
#include "support/scoped_env.hpp"
#include "support/gpu_backends.hpp"

namespace qgpu::ssb {
namespace {

class SsbGpu : public ::testing::TestWithParam<Backend> {};

double max_phase_difference(const SsbResult& a, const SsbResult& b) {
  double m = 0;
  for (std::size_t i = 0; i < a.phase.data.size(); ++i)
    m = std::max(m, std::abs(double(a.phase.data[i]) - double(b.phase.data[i])));
  return m;
}

TEST_P(SsbGpu, ReconstructMatchesTheCpuReference) {
  QGPU_REQUIRE_BACKEND(GetParam());
  const Dataset& host = testing::dataset(100);
  const Dataset dev = host.to_backend(GetParam());
  const SsbParams p = testing::true_params(100);
  const SsbResult cpu = reconstruct(host, p), gpu = reconstruct(dev, p);
  ASSERT_EQ(gpu.phase.rows, 40u);
  ASSERT_EQ(gpu.phase.cols, 48u);
  EXPECT_LE(testing::relative_l2(gpu, cpu), 1e-4);
  EXPECT_LE(max_phase_difference(gpu, cpu), 1e-4);
  EXPECT_GE(testing::pearson(gpu.phase.data, testing::truth(100)), 0.9);
  EXPECT_EQ(gpu.provenance.backend, backend_name(GetParam()));
  const nlohmann::json& e = gpu.provenance.parameters.at("engine");
  EXPECT_EQ(e.at("resident_groups").get<std::size_t>(), 357u);
  EXPECT_EQ(e.at("streamed_groups").get<std::size_t>(), 0u);
  // cuda: R2C, the half spectrum (40 x 25); vulkan: C2C, the full spectrum (40 x 48)
  EXPECT_EQ(e.at("g_cube_bytes").get<std::size_t>(), 357u * 40u * (GetParam() == Backend::cuda ? 25u : 48u) * 8u);
}

TEST_P(SsbGpu, PreviewMatchesTheCpuReference) {
  QGPU_REQUIRE_BACKEND(GetParam());
  const Dataset& host = testing::dataset(100);
  const Dataset dev = host.to_backend(GetParam());
  const SsbParams p = testing::true_params(100);
  for (std::size_t bin : {2, 4}) {
    const SsbResult cpu = preview(host, p, bin), gpu = preview(dev, p, bin);
    EXPECT_LE(testing::relative_l2(gpu, cpu), 1e-4) << "bin " << bin;
    EXPECT_LE(max_phase_difference(gpu, cpu), 1e-4) << "bin " << bin;
  }
}

// Odd scan sizes (no Nyquist row/column, Hermitian weights on the half spectrum) and the fit loss itself.
TEST_P(SsbGpu, OddScanAndLossMatchTheCpuReference) {
  QGPU_REQUIRE_BACKEND(GetParam());
  sample::SampleSpec s = testing::spec(80);
  s.scan_rows = 33;
  s.scan_cols = 35;
  const Dataset host = testing::simulate(s), dev = host.to_backend(GetParam());
  const SsbParams p = params_from_metadata(host);
  const SsbResult cpu = reconstruct(host, p), gpu = reconstruct(dev, p);
  EXPECT_LE(testing::relative_l2(gpu, cpu), 1e-4);
  EXPECT_GE(testing::pearson(gpu.phase.data, sample::object_phase_at_scan(s)), 0.9);

  nlohmann::json res;
  const detail::Plan plan = detail::make_plan(host, p, 1, res);
  auto ce = detail::make_engine(host, plan), ge = detail::make_engine(dev, plan);
  EXPECT_NEAR(ge->mean_counts(), ce->mean_counts(), 1e-5 * ce->mean_counts());
  for (double c1 : {-200.0, 0.0, 80.0, 150.0}) {
    Aberrations a = p.aberrations;
    a.C1 = c1;
    const double lc = ce->loss(a), lg = ge->loss(a);
    EXPECT_NEAR(lg, lc, 1e-4 * std::abs(lc)) << "C1 " << c1;
  }
}

// Scan sizes with prime factors above 13 (37 x 41): the batched FFTs over the scan take VkFFT's Bluestein path on
// vulkan (cuFFT's own on cuda); reconstruction and loss against the reference, tolerances as above.
TEST_P(SsbGpu, PrimeScanMatchesTheCpuReference) {
  QGPU_REQUIRE_BACKEND(GetParam());
  sample::SampleSpec s = testing::spec(60);
  s.scan_rows = 37;
  s.scan_cols = 41;
  const Dataset host = testing::simulate(s), dev = host.to_backend(GetParam());
  const SsbParams p = params_from_metadata(host);
  const SsbResult cpu = reconstruct(host, p), gpu = reconstruct(dev, p);
  ASSERT_EQ(gpu.phase.rows, 37u);
  ASSERT_EQ(gpu.phase.cols, 41u);
  EXPECT_LE(testing::relative_l2(gpu, cpu), 1e-4);
  EXPECT_LE(max_phase_difference(gpu, cpu), 1e-4);
  EXPECT_GE(testing::pearson(gpu.phase.data, sample::object_phase_at_scan(s)), 0.9);
  nlohmann::json res;
  const detail::Plan plan = detail::make_plan(host, p, 1, res);
  auto ce = detail::make_engine(host, plan), ge = detail::make_engine(dev, plan);
  for (double c1 : {-100.0, 60.0}) {
    Aberrations a = p.aberrations;
    a.C1 = c1;
    const double lc = ce->loss(a), lg = ge->loss(a);
    EXPECT_NEAR(lg, lc, 1e-4 * std::abs(lc)) << "C1 " << c1;
  }
}

// G larger than the (artificially lowered) device budget: part resident, the rest regathered per evaluation.
TEST_P(SsbGpu, StreamedGMatchesResidentG) {
  QGPU_REQUIRE_BACKEND(GetParam());
  const Dataset& host = testing::dataset(100);
  const Dataset dev = host.to_backend(GetParam());
  const SsbParams p = testing::true_params(100);
  const SsbResult resident = reconstruct(dev, p);
  // G is 2.86 MB on cuda (R2C), 5.48 MB on vulkan (C2C): either way part of it resident, part streamed
  ASSERT_EQ(setenv("QGPU_SSB_DEVICE_BUDGET_BYTES", "1500000", 1), 0);
  SsbResult streamed;
  try {
    streamed = reconstruct(dev, p);
  } catch (...) {
    unsetenv("QGPU_SSB_DEVICE_BUDGET_BYTES");
    throw;
  }
  unsetenv("QGPU_SSB_DEVICE_BUDGET_BYTES");
  const nlohmann::json& e = streamed.provenance.parameters.at("engine");
  EXPECT_GT(e.at("streamed_groups").get<std::size_t>(), 0u);
  EXPECT_GT(e.at("resident_groups").get<std::size_t>(), 0u);
  EXPECT_LE(testing::relative_l2(streamed, resident), 1e-5);
  EXPECT_LE(testing::relative_l2(streamed, reconstruct(host, p)), 1e-4);
}

TEST_P(SsbGpu, FitFindsTheSameDefocus) {
  QGPU_REQUIRE_BACKEND(GetParam());
  const Dataset& host = testing::dataset(150);
  const Dataset dev = host.to_backend(GetParam());
  SsbParams p = testing::true_params(150);
  p.aberrations.C1 = 0;
  FitOptions o;
  o.trials = 40;
  o.c1_min = -400;
  o.c1_max = 400;
  o.detector_bin = 2;
  const FitResult gpu = fit(dev, p, o), cpu = fit(host, p, o);
  EXPECT_NEAR(gpu.aberrations.C1, 150.0, 7.5);  // 5 %
  EXPECT_NEAR(gpu.aberrations.C1, cpu.aberrations.C1, 7.5);
  EXPECT_NEAR(gpu.loss, cpu.loss, 1e-3 * std::abs(cpu.loss));
  EXPECT_EQ(gpu.provenance.backend, backend_name(GetParam()));
}

TEST_P(SsbGpu, NonsenseParametersRaiseInvalidArgument) {
  QGPU_REQUIRE_BACKEND(GetParam());
  const Dataset dev = testing::dataset(0).to_backend(GetParam());
  SsbParams p = testing::true_params(0);
  p.scan_step_angstrom = 0;
  EXPECT_THROW(reconstruct(dev, p), InvalidArgument);
  p = testing::true_params(0);
  p.disk_center = std::pair<double, double>{-3.0, 10.0};
  EXPECT_THROW(preview(dev, p), InvalidArgument);
}

// Every weighting (phase: unit-Gamma sums; wiener: the per-ring power on the GPU, wiener_psi_kernel) and
// auto's choice against the CPU reference, at 1e3 counts per frame (where the weightings differ most) and on the
// fixture's 60000 counts; tolerances as above.
TEST_P(SsbGpu, WeightingsMatchTheCpuReference) {
  QGPU_REQUIRE_BACKEND(GetParam());
  sample::SampleSpec low = testing::spec(100);
  low.dose_per_frame = 1000;
  low.seed = 7;
  const Dataset low_host = testing::simulate(low);
  for (const Dataset* host : {&testing::dataset(100), &low_host}) {
    const Dataset dev = host->to_backend(GetParam());
    SsbParams p = params_from_metadata(*host);
    for (Weighting w : {Weighting::amplitude, Weighting::phase, Weighting::wiener, Weighting::automatic}) {
      p.weighting = w;
      const SsbResult cpu = reconstruct(*host, p), gpu = reconstruct(dev, p);
      EXPECT_LE(testing::relative_l2(gpu, cpu), 1e-4) << weighting_name(w);
      EXPECT_LE(max_phase_difference(gpu, cpu), 1e-4) << weighting_name(w);
      EXPECT_EQ(gpu.provenance.parameters.at("weighting"), cpu.provenance.parameters.at("weighting"));
      const SsbResult pc = preview(*host, p, 2), pg = preview(dev, p, 2);
      EXPECT_LE(testing::relative_l2(pg, pc), 1e-4) << "preview " << weighting_name(w);
    }
  }
}

using test::ScopedEnv;

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// The encoded gather decodes the BF pixels in chunks bounded by QGPU_SSB_GATHER_CHUNK_BYTES (at 4096^2 the disk's
// 3209 pixels x 16.7M frames would not fit at once): a chunk of 1 pixel splits every group into parts (added in
// float, exact for these counts), 7 pixels mixes whole groups and parts. Each gives the dense gather's G bit for
// bit (same float32 pipeline), with G resident and with part of it streamed, and so the dense result; and matches
// the CPU reference within the tolerances above.
TEST(SsbCudaEncoded, ChunkedGatherEqualsTheDenseGather) {
  QGPU_REQUIRE_BACKEND(Backend::cuda);
  const Dataset& host = testing::dataset(100);
  const Dataset dense = host.to_device(), enc = host.to_encoded().to_device();
  ASSERT_EQ(enc.representation(), "encoded");
  const SsbParams p = testing::true_params(100);
  const std::size_t px_row = host.shape().frames() * dtype_size(host.dtype());  // one pixel's decoded counts
  for (const char* budget : {"", "100000"}) {  // 100 kB: 9 groups of 8 kB resident, the rest streamed
    std::unique_ptr<ScopedEnv> b;
    if (*budget) b = std::make_unique<ScopedEnv>("QGPU_SSB_DEVICE_BUDGET_BYTES", budget);
    for (std::size_t bin : {1, 4}) {
      const SsbResult ref = preview(dense, p, bin), cpu = preview(host, p, bin);
      EXPECT_LE(testing::relative_l2(ref, cpu), 1e-4) << "bin " << bin;
      for (std::size_t pixels : {1, 7}) {
        SsbResult r;
        {
          const ScopedEnv chunk("QGPU_SSB_GATHER_CHUNK_BYTES", std::to_string(pixels * px_row));
          r = preview(enc, p, bin);
        }
        const std::string what = "bin " + std::to_string(bin) + ", " + std::to_string(pixels) + " px chunks, budget '" +
                                 budget + "'";
        const nlohmann::json& e = r.provenance.parameters.at("engine");
        EXPECT_EQ(e.at("gather_chunk_pixels").get<std::size_t>(), pixels) << what;
        // one buffer: the chunk, or a whole batch's pixels when fewer (3 one-pixel groups at bin 1 under the budget)
        EXPECT_LE(e.at("gather_buffer_bytes").get<std::size_t>(), pixels * px_row) << what;
        EXPECT_EQ(e.at("gather_buffer_bytes").get<std::size_t>() % px_row, 0u) << what;
        EXPECT_GE(e.at("gather_buffer_bytes").get<std::size_t>(), (*budget && bin == 1 ? 1 : pixels) * px_row) << what;
        if (*budget) EXPECT_GT(e.at("streamed_groups").get<std::size_t>(), 0u) << what;
        EXPECT_EQ(e.at("g_resident_bytes").get<std::size_t>() + e.at("g_streamed_bytes").get<std::size_t>(),
                  e.at("g_cube_bytes").get<std::size_t>()) << what;
        EXPECT_TRUE(same_bits(r.phase.data, ref.phase.data)) << what;
        EXPECT_TRUE(same_bits(r.amplitude.data, ref.amplitude.data)) << what;
        EXPECT_LE(testing::relative_l2(r, cpu), 1e-4) << what;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, SsbGpu, QGPU_GPU_BACKENDS);

}  // namespace
}  // namespace qgpu::ssb
