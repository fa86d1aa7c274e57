// Resize and label burn-in on hand-made frames, exact bytes.
#include <gtest/gtest.h>

#include "core/error.hpp"
#include "display/colormap.hpp"
#include "movie/frame_ops.hpp"

namespace qgpu::movie {
namespace {

display::Rgba make(std::size_t rows, std::size_t cols, const std::vector<std::uint8_t>& red) {
  display::Rgba img;
  img.rows = rows;
  img.cols = cols;
  for (std::uint8_t v : red) img.rgba.insert(img.rgba.end(), {v, std::uint8_t(255 - v), 7, 255});
  return img;
}

std::vector<std::uint8_t> reds(const display::Rgba& img) {
  std::vector<std::uint8_t> out;
  for (std::size_t i = 0; i < img.rgba.size(); i += 4) out.push_back(img.rgba[i]);
  return out;
}

TEST(MovieFrameOps, NearestDoublesEachPixel) {
  const display::Rgba out = resize(make(2, 3, {1, 2, 3, 4, 5, 6}), 4, 6, Resize::nearest);
  EXPECT_EQ(reds(out), (std::vector<std::uint8_t>{1, 1, 2, 2, 3, 3, 1, 1, 2, 2, 3, 3,  //
                                                  4, 4, 5, 5, 6, 6, 4, 4, 5, 5, 6, 6}));
  EXPECT_EQ(out.rgba[1], 254);  // other channels follow
}

TEST(MovieFrameOps, NearestDownsamplePicksCentres) {
  // 1 x 5 -> 1 x 2: output centres at source 1.25 and 3.75 -> indices 1 and 3.
  EXPECT_EQ(reds(resize(make(1, 5, {10, 20, 30, 40, 50}), 1, 2, Resize::nearest)), (std::vector<std::uint8_t>{20, 40}));
}

TEST(MovieFrameOps, AreaAveragesBlocksRoundingHalfUp) {
  // 2x2 blocks: (1+2+5+6)/4 = 3.5 -> 4, (3+4+7+8)/4 = 5.5 -> 6, (9+10+13+14)/4 = 11.5 -> 12, 13.5 -> 14
  const display::Rgba in = make(4, 4, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16});
  EXPECT_EQ(reds(resize(in, 2, 2, Resize::area)), (std::vector<std::uint8_t>{4, 6, 12, 14}));
}

TEST(MovieFrameOps, AreaFractionalOverlap) {
  // 1 x 3 -> 1 x 2: output 0 covers source [0, 1.5): (1 * 30 + 0.5 * 90) / 1.5 = 50; output 1: (0.5 * 90 + 1 * 150) / 1.5 = 130.
  EXPECT_EQ(reds(resize(make(1, 3, {30, 90, 150}), 1, 2, Resize::area)), (std::vector<std::uint8_t>{50, 130}));
  // upsampling 1 x 2 -> 1 x 3: middle output half over each source: (30 + 90) / 2 = 60
  EXPECT_EQ(reds(resize(make(1, 2, {30, 90}), 1, 3, Resize::area)), (std::vector<std::uint8_t>{30, 60, 90}));
}

TEST(MovieFrameOps, LabelDrawsGlyphsInTheMapsEndColours) {
  display::Rgba img = make(20, 40, std::vector<std::uint8_t>(800, 100));
  const display::Lut& lut = display::colormap("viridis");
  burn_label(img, "1", lut);
  auto px = [&](std::size_t r, std::size_t c) { return &img.rgba[(r * 40 + c) * 4]; };
  auto is = [&](std::size_t r, std::size_t c, int idx) {
    return std::equal(px(r, c), px(r, c) + 4, &lut[4 * idx]);
  };
  // '1' = rows 010 110 010 010 111 at cells (1..5, 1..3); box 5 x 7 cells.
  EXPECT_TRUE(is(1, 2, 255));
  EXPECT_TRUE(is(1, 1, 0));
  EXPECT_TRUE(is(2, 1, 255));
  EXPECT_TRUE(is(5, 1, 255) && is(5, 2, 255) && is(5, 3, 255));
  EXPECT_TRUE(is(6, 4, 0));     // box edge
  EXPECT_EQ(px(7, 0)[0], 100);  // below the box: untouched
  EXPECT_EQ(px(0, 5)[0], 100);  // right of the box: untouched
  EXPECT_EQ(label_width_cells("1"), 3u);
}

TEST(MovieFrameOps, LabelScalesWithFrameSize) {
  display::Rgba img = make(200, 200, std::vector<std::uint8_t>(40000, 100));
  burn_label(img, "1", display::colormap("gray"));
  // scale 200 / 96 = 2: the '1' top pixel (cell 1, 2) covers rows 2..3, cols 4..5.
  EXPECT_EQ(img.rgba[(2 * 200 + 4) * 4], 255);
  EXPECT_EQ(img.rgba[(3 * 200 + 5) * 4], 255);
  EXPECT_EQ(img.rgba[(2 * 200 + 3) * 4], 0);
  EXPECT_EQ(img.rgba[(14 * 200 + 0) * 4], 100);  // box is 7 x 2 = 14 rows
}

TEST(MovieFrameOps, UnknownLabelCharacterRejected) {
  display::Rgba img = make(8, 8, std::vector<std::uint8_t>(64, 1));
  EXPECT_THROW(burn_label(img, "r\xc3\xa9", display::colormap("gray")), InvalidArgument);
  EXPECT_EQ(img.rgba[0], 1);  // nothing drawn
}

}  // namespace
}  // namespace qgpu::movie
