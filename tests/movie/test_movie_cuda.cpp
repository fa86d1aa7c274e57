// Frame parity: movie frames rendered on the CUDA backend (detector + display kernels) equal the CPU reference's
// bytes. SSB frames are compared within a tolerance (cuFFT vs FFTW phases differ in the last bits).
#include <gtest/gtest.h>

#include <cstdlib>

#include "movie_fixtures.hpp"
#include "support/cuda_required.hpp"

namespace qgpu::movie {
namespace {

void expect_parity(MovieSpec s, const char* what) {
  const Dataset& cpu = test::movie_sample();
  const Dataset gpu = cpu.to_device();
  s.label = true;
  const auto a = test::all_frames(cpu, s), b = test::all_frames(gpu, s);
  ASSERT_EQ(a.size(), b.size()) << what;
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].rgba.rgba, b[i].rgba.rgba) << what << " frame " << i;
    EXPECT_EQ(a[i].label, b[i].label) << what;
    EXPECT_EQ(b[i].rgba.provenance.backend, "cuda") << what;
  }
}

TEST(MovieCuda, AdfSweepFramesMatchCpu) {
  QGPU_REQUIRE_CUDA();
  MovieSpec s;
  s.sequence = Sequence::adf_sweep;
  s.start = 2;
  s.stop = 14;
  s.frames = 7;
  s.look.lower_percentile = 1;
  s.look.upper_percentile = 99;
  expect_parity(s, "adf sweep (fitted centre)");
  s.adf_width = 5;
  s.width = 50;
  s.height = 40;
  expect_parity(s, "adf sweep, width 5, area resize");
}

TEST(MovieCuda, BfSweepFramesMatchCpu) {
  QGPU_REQUIRE_CUDA();
  MovieSpec s;
  s.sequence = Sequence::bf_sweep;
  s.start = 1;
  s.stop = 10;
  s.frames = 5;
  s.look.colormap = "gray";
  expect_parity(s, "bf sweep");
}

TEST(MovieCuda, PathFramesMatchCpu) {
  QGPU_REQUIRE_CUDA();
  MovieSpec s;
  s.sequence = Sequence::path_line;
  s.line[0] = 1, s.line[1] = 2, s.line[2] = 10, s.line[3] = 13;
  s.look.scale = display::Scale::log;
  expect_parity(s, "path line");
}

TEST(MovieCuda, SsbDefocusFramesCloseToCpu) {
  QGPU_REQUIRE_CUDA();
  MovieSpec s;
  s.sequence = Sequence::ssb_defocus;
  s.start = -50;
  s.stop = 50;
  s.frames = 2;
  s.look.colormap = "gray";
  const auto a = test::all_frames(test::movie_sample(), s);
  const auto b = test::all_frames(test::movie_sample().to_device(), s);
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    // gray: one colour index per level; FFT rounding may move a pixel by an index or two.
    std::size_t far = 0;
    for (std::size_t k = 0; k < a[i].rgba.rgba.size(); ++k) far += std::abs(int(a[i].rgba.rgba[k]) - int(b[i].rgba.rgba[k])) > 2;
    EXPECT_EQ(far, 0u) << "frame " << i;
  }
}

}  // namespace
}  // namespace qgpu::movie
