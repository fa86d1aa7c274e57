// Movie frames on the CPU reference: each frame equals an independently computed product rendered by the display
// pipeline; values, labels and positions as specified; rendering is deterministic.
#include <gtest/gtest.h>

#include <cmath>

#include "device/device.hpp"
#include "display/display.hpp"
#include "movie/frame_ops.hpp"
#include "movie_fixtures.hpp"
#include "ssb/ssb.hpp"

namespace qgpu::movie {
namespace {

using test::all_frames;
using test::movie_sample;

// ADF by brute force over the host counts: inner^2 <= d^2 <= outer^2 around (cr, cc).
Image<float> brute_annulus(const Dataset& ds, double cr, double cc, double inner, double outer) {
  const Shape4D& s = ds.shape();
  const auto* d = reinterpret_cast<const std::uint16_t*>(ds.host_bytes().data());
  Image<float> img;
  img.rows = s.scan_rows;
  img.cols = s.scan_cols;
  for (std::size_t f = 0; f < s.frames(); ++f) {
    std::uint64_t sum = 0;
    for (std::size_t r = 0; r < s.det_rows; ++r)
      for (std::size_t c = 0; c < s.det_cols; ++c) {
        const double d2 = (r - cr) * (r - cr) + (c - cc) * (c - cc);
        if (d2 >= inner * inner && d2 <= outer * outer) sum += d[f * s.frame_pixels() + r * s.det_cols + c];
      }
    img.data.push_back(static_cast<float>(sum));
  }
  return img;
}

display::DisplayOptions look(const char* cmap, display::Scale scale = display::Scale::linear) {
  display::DisplayOptions o;
  o.colormap = cmap;
  o.scale = scale;
  o.lower_percentile = 1;
  o.upper_percentile = 99;
  return o;
}

TEST(MovieFramesCpu, AdfSweepEqualsBruteForceAnnulusRendered) {
  const Dataset& ds = movie_sample();
  MovieSpec s;
  s.sequence = Sequence::adf_sweep;
  s.start = 3;
  s.stop = 9;
  s.frames = 4;
  s.adf_width = 5;
  s.center = std::pair{15.5, 15.0};
  s.look = look("inferno");
  const auto frames = all_frames(ds, s);
  ASSERT_EQ(frames.size(), 4u);
  const double inner[4] = {3, 5, 7, 9};
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_DOUBLE_EQ(frames[i].value, inner[i]);
    const display::Rgba want =
        display::render(on_backend(brute_annulus(ds, 15.5, 15.0, inner[i], inner[i] + 5), Backend::cpu), s.look);
    ASSERT_EQ(frames[i].rgba.rows, 12u);
    ASSERT_EQ(frames[i].rgba.cols, 14u);
    EXPECT_EQ(frames[i].rgba.rgba, want.rgba) << "frame " << i;
  }
  EXPECT_EQ(frames[1].label, "ADF 5.0-10.0 PX");
  EXPECT_NE(frames[0].rgba.rgba, frames[3].rgba.rgba);  // the sweep changes the picture
}

TEST(MovieFramesCpu, AdfSweepDefaultOuterIsTheWholeDetector) {
  const Dataset& ds = movie_sample();
  MovieSpec s;
  s.sequence = Sequence::adf_sweep;
  s.start = s.stop = 6;
  s.frames = 1;
  s.center = std::pair{16.0, 16.0};
  const auto frames = all_frames(ds, s);
  ASSERT_EQ(frames.size(), 1u);
  // farthest pixel (0, 0) or (31, 31): hypot(16, 16) = 22.63; outer reaches every pixel.
  const display::Rgba want = display::render(on_backend(brute_annulus(ds, 16, 16, 6, 1e9), Backend::cpu), s.look);
  EXPECT_EQ(frames[0].rgba.rgba, want.rgba);
  EXPECT_EQ(frames[0].label, "ADF 6.0-22.6 PX");
}

TEST(MovieFramesCpu, BfSweepValuesEvenlySpacedAndDeterministic) {
  const Dataset& ds = movie_sample();
  MovieSpec s;
  s.sequence = Sequence::bf_sweep;
  s.start = 2;
  s.stop = 12;
  s.frames = 5;
  s.center = std::pair{16.0, 16.0};
  const auto a = all_frames(ds, s), b = all_frames(ds, s);
  ASSERT_EQ(a.size(), 5u);
  const double want[5] = {2, 4.5, 7, 9.5, 12};
  for (std::size_t i = 0; i < 5; ++i) {
    EXPECT_DOUBLE_EQ(a[i].value, want[i]);
    EXPECT_EQ(a[i].rgba.rgba, b[i].rgba.rgba) << "frame " << i << " differs between two runs";
    EXPECT_EQ(a[i].rgba.rgba, display::render(on_backend(brute_annulus(ds, 16, 16, 0, want[i]), Backend::cpu), s.look).rgba);
  }
  EXPECT_EQ(a[1].label, "BF R 4.5 PX");
}

// The diffraction pattern at (r, c) as float, from the host counts.
Image<float> pattern(const Dataset& ds, std::size_t r, std::size_t c) {
  const Shape4D& s = ds.shape();
  const auto* d = reinterpret_cast<const std::uint16_t*>(ds.host_bytes().data());
  Image<float> img;
  img.rows = s.det_rows;
  img.cols = s.det_cols;
  const std::size_t f = r * s.scan_cols + c;
  for (std::size_t i = 0; i < s.frame_pixels(); ++i) img.data.push_back(d[f * s.frame_pixels() + i]);
  return img;
}

TEST(MovieFramesCpu, PathRowShowsEveryColumnsPattern) {
  const Dataset& ds = movie_sample();
  MovieSpec s;
  s.sequence = Sequence::path_row;
  s.row = 5;
  s.look = look("magma", display::Scale::log);
  const auto frames = all_frames(ds, s);
  ASSERT_EQ(frames.size(), 14u);
  for (std::size_t c = 0; c < 14; ++c) {
    EXPECT_EQ(frames[c].value, double(5 * 14 + c));
    EXPECT_EQ(frames[c].rgba.rgba, display::render(on_backend(pattern(ds, 5, c), Backend::cpu), s.look).rgba) << "column " << c;
  }
  EXPECT_EQ(frames[3].label, "SCAN 5,3");
}

TEST(MovieFramesCpu, PathLinePositionsRoundHalfUp) {
  const Dataset& ds = movie_sample();
  MovieSpec s;
  s.sequence = Sequence::path_line;
  s.line[0] = 0, s.line[1] = 0, s.line[2] = 3, s.line[3] = 6;
  const auto frames = all_frames(ds, s);
  // 7 positions (max(3, 6) + 1); row = 3 i / 6 rounded half up.
  const std::size_t rows[7] = {0, 1, 1, 2, 2, 3, 3};
  ASSERT_EQ(frames.size(), 7u);
  for (std::size_t i = 0; i < 7; ++i) {
    EXPECT_EQ(frames[i].value, double(rows[i] * 14 + i)) << "position " << i;
    EXPECT_EQ(frames[i].rgba.rgba, display::render(on_backend(pattern(ds, rows[i], i), Backend::cpu), s.look).rgba);
  }
  s.frames = 2;  // just the end points
  const auto ends = all_frames(ds, s);
  ASSERT_EQ(ends.size(), 2u);
  EXPECT_EQ(ends[1].value, double(3 * 14 + 6));
}

TEST(MovieFramesCpu, SsbDefocusFramesAreReconstructionsAtEachC1) {
  const Dataset& ds = movie_sample();
  MovieSpec s;
  s.sequence = Sequence::ssb_defocus;
  s.start = -100;
  s.stop = 100;
  s.frames = 3;
  s.look = look("gray");
  const auto frames = all_frames(ds, s);
  ASSERT_EQ(frames.size(), 3u);
  ssb::SsbParams p = ssb::params_from_metadata(ds);
  for (std::size_t i = 0; i < 3; ++i) {
    p.aberrations.C1 = -100.0 + 100.0 * double(i);
    EXPECT_DOUBLE_EQ(frames[i].value, p.aberrations.C1);
    EXPECT_EQ(frames[i].rgba.rgba, display::render(on_backend(ssb::reconstruct(ds, p).phase, Backend::cpu), s.look).rgba);
  }
  EXPECT_EQ(frames[0].label, "C1 -100.0 A");
}

TEST(MovieFramesCpu, SizeAndLabelApplied) {
  const Dataset& ds = movie_sample();
  MovieSpec s;
  s.sequence = Sequence::bf_sweep;
  s.start = s.stop = 5;
  s.frames = 1;
  s.width = 28;
  s.height = 24;
  s.resize = Resize::nearest;
  s.look = look("gray");
  const display::Rgba plain = all_frames(ds, s)[0].rgba;
  ASSERT_EQ(plain.rows, 24u);
  ASSERT_EQ(plain.cols, 28u);
  s.label = true;
  const display::Rgba labelled = all_frames(ds, s)[0].rgba;
  // "BF R 5.0 PX": box of (11 * 4 - 1 + 2) x 7 cells at scale 1, clipped to the 28 columns.
  std::size_t changed_outside = 0;
  for (std::size_t r = 0; r < 24; ++r)
    for (std::size_t c = 0; c < 28; ++c)
      if (r >= 7 && labelled.rgba[(r * 28 + c) * 4] != plain.rgba[(r * 28 + c) * 4]) ++changed_outside;
  EXPECT_EQ(changed_outside, 0u);
  EXPECT_EQ(labelled.rgba[0], 0);  // box corner: gray LUT[0]
  // 'B' row 0 = 110: pixels (1, 1) and (1, 2) drawn in LUT[255], (1, 3) not.
  EXPECT_EQ(labelled.rgba[(1 * 28 + 1) * 4], 255);
  EXPECT_EQ(labelled.rgba[(1 * 28 + 2) * 4], 255);
  EXPECT_EQ(labelled.rgba[(1 * 28 + 3) * 4], 0);
}

}  // namespace
}  // namespace qgpu::movie
