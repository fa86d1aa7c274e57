#include <gtest/gtest.h>

#include <array>

#include "core/error.hpp"
#include "display/display.hpp"
#include "display/figure.hpp"
#include "display/font.hpp"
#include "test_images.hpp"

namespace qgpu::display {
namespace {

using Px = std::array<int, 4>;

Px at(const Rgba& img, std::size_t r, std::size_t c) {
  const std::uint8_t* p = &img.rgba[(r * img.cols + c) * 4];
  return {p[0], p[1], p[2], p[3]};
}

Px lut_at(const std::string& map, std::size_t i) {
  const Lut& l = colormap(map);
  return {l[4 * i], l[4 * i + 1], l[4 * i + 2], l[4 * i + 3]};
}

// rows x cols ramp 0 .. rows*cols-1, rendered gray over its full range.
Rgba ramp(std::size_t rows, std::size_t cols, const std::string& map = "gray") {
  std::vector<float> d(rows * cols);
  for (std::size_t i = 0; i < d.size(); ++i) d[i] = float(i);
  DisplayOptions o;
  o.colormap = map;
  return render(test::make_image(rows, cols, d), o);
}

TEST(DisplayFigure, RoundLengths) {
  EXPECT_DOUBLE_EQ(round_length(16.0), 10.0);
  EXPECT_DOUBLE_EQ(round_length(24.9), 20.0);
  EXPECT_DOUBLE_EQ(round_length(50.0), 50.0);
  EXPECT_DOUBLE_EQ(round_length(0.7), 0.5);
  EXPECT_DOUBLE_EQ(round_length(1.0), 1.0);
  EXPECT_THROW(round_length(0.0), InvalidArgument);
}

TEST(DisplayFigure, EnlargeRepeatsEachPixel) {
  const Rgba in = ramp(2, 3);
  FigureOptions f;
  f.png_scale = 4;
  const Rgba out = figure(in, f);
  ASSERT_EQ(out.rows, 8u);
  ASSERT_EQ(out.cols, 12u);
  for (std::size_t r = 0; r < 8; ++r)
    for (std::size_t c = 0; c < 12; ++c) EXPECT_EQ(at(out, r, c), at(in, r / 4, c / 4)) << r << "," << c;
  EXPECT_EQ(out.provenance.parameters["figure"]["png_scale"], 4);
  EXPECT_EQ(out.provenance.output_shape, (std::vector<std::size_t>{8, 12, 4}));
  EXPECT_TRUE(out.provenance.parameters["figure"]["colorbar"].is_null());
}

TEST(DisplayFigure, ScaleOneWithoutAnnotationIsUnchanged) {
  const Rgba in = ramp(5, 7);
  const Rgba out = figure(in, FigureOptions{});
  EXPECT_EQ(out.rgba, in.rgba);
}

TEST(DisplayFigure, BadOptionsRaise) {
  FigureOptions f;
  f.png_scale = 0;
  EXPECT_THROW(figure(ramp(2, 2), f), InvalidArgument);
  f.png_scale = 65;
  EXPECT_THROW(figure(ramp(2, 2), f), InvalidArgument);
  f.png_scale = 1;
  f.pixel_size = PixelSize{-1.0, "angstrom"};
  EXPECT_THROW(figure(ramp(2, 2), f), InvalidArgument);
  f.pixel_size = PixelSize{1.0, "furlong"};
  EXPECT_THROW(figure(ramp(2, 2), f), InvalidArgument);
}

TEST(DisplayFigure, ColorbarRunsTheMapTopToBottom) {
  const Rgba in = ramp(64, 64, "viridis");  // values 0 .. 4095
  FigureOptions f;
  f.annotate = true;
  const Rgba out = figure(in, f);
  ASSERT_EQ(out.rows, 64u);
  ASSERT_GT(out.cols, 64u);
  // the image itself is untouched (no pixel size: no scale bar)
  for (std::size_t r = 0; r < 64; r += 7)
    for (std::size_t c = 0; c < 64; c += 5) EXPECT_EQ(at(out, r, c), at(in, r, c));
  // k = 1: gap 2, bar 4 px wide from column 66, rows 3 .. 60; top = index 255, bottom = index 0
  EXPECT_EQ(at(out, 3, 67), lut_at("viridis", 255));
  EXPECT_EQ(at(out, 60, 67), lut_at("viridis", 0));
  EXPECT_EQ(at(out, 0, 67), (Px{255, 255, 255, 255}));  // white margin above the bar
  EXPECT_EQ(at(out, 64 / 2, 65), (Px{255, 255, 255, 255}));  // gap
  const nlohmann::json& cb = out.provenance.parameters["figure"]["colorbar"];
  EXPECT_EQ(cb["labels"], (nlohmann::json{"0", "4.1e+03"}));
  EXPECT_DOUBLE_EQ(cb["hi"].get<double>(), 4095.0);
  // the labels are drawn in black right of the bar
  bool black = false;
  for (std::size_t r = 0; r < 8; ++r)
    for (std::size_t c = 71; c < out.cols; ++c) black = black || at(out, r, c) == Px{0, 0, 0, 255};
  EXPECT_TRUE(black);
}

TEST(DisplayFigure, ScaleBarLengthFromPixelSize) {
  const Rgba in = ramp(64, 64);
  FigureOptions f;
  f.annotate = true;
  f.png_scale = 2;                              // 128 x 128 output
  f.pixel_size = PixelSize{0.5, "angstrom"};    // 0.25 A per output pixel: a quarter of the width is 8 A
  const Rgba out = figure(in, f);
  const nlohmann::json& sb = out.provenance.parameters["figure"]["scale_bar"];
  ASSERT_TRUE(sb.is_object()) << out.provenance.parameters.dump();
  EXPECT_EQ(sb["label"], "5 A");
  EXPECT_EQ(sb["pixels"], 20);  // 5 A / 0.25 A
  // k = 1: a black box rows 116..125, columns 2..23 (22 wide: the 20 px bar and a 1 px margin each side); text
  // rows 117..121, the white bar rows 123..124, columns 3..22
  EXPECT_EQ(at(out, 123, 3), (Px{255, 255, 255, 255}));
  EXPECT_EQ(at(out, 124, 22), (Px{255, 255, 255, 255}));
  EXPECT_EQ(at(out, 124, 23), (Px{0, 0, 0, 255}));
  EXPECT_EQ(at(out, 125, 3), (Px{0, 0, 0, 255}));
  EXPECT_EQ(at(out, 122, 10), (Px{0, 0, 0, 255}));
  EXPECT_EQ(at(out, 126, 3), at(in, 63, 1));  // below the box: the image
  f.pixel_size = PixelSize{2.0, "angstrom"};  // 1 A per output pixel: 32 A max -> 20 A = 2 nm, 20 px
  EXPECT_EQ(figure(in, f).provenance.parameters["figure"]["scale_bar"]["label"], "2 NM");
  f.pixel_size = PixelSize{0.8, "mrad"};  // 0.4 mrad per output pixel: 12.8 mrad -> 10 mrad, 25 px
  const nlohmann::json mr = figure(in, f).provenance.parameters["figure"]["scale_bar"];
  EXPECT_EQ(mr["label"], "10 MRAD");
  EXPECT_EQ(mr["pixels"], 25);
}

TEST(DisplayFigure, SymmetricRangePutsZeroMidMap) {
  const Image<float> img = test::make_image(1, 4, {-1.0f, 0.0f, 0.5f, 3.0f});
  DisplayOptions o;
  o.colormap = kDivergingColormap;
  const DisplayOptions s = symmetric_about_zero(img, o);
  ASSERT_TRUE(s.vmin && s.vmax);
  EXPECT_DOUBLE_EQ(*s.vmin, -3.0);
  EXPECT_DOUBLE_EQ(*s.vmax, 3.0);
  const Rgba r = render(img, s);
  EXPECT_EQ(at(r, 0, 1), lut_at("RdBu_r", 128));  // 0 -> the white middle
  EXPECT_EQ(at(r, 0, 3), lut_at("RdBu_r", 255));  // +3 -> dark red
  EXPECT_EQ(at(r, 0, 0), lut_at("RdBu_r", 85));   // -1: floor(2/6 * 255 + 0.5) = 85, blue side
  const Image<float> zeros = test::make_image(1, 2, {0.0f, 0.0f});
  EXPECT_DOUBLE_EQ(*symmetric_about_zero(zeros, o).vmax, 1.0);
}

TEST(DisplayFont, WidthAndUnknownCharacter) {
  EXPECT_EQ(text_width_cells("10 NM"), 19u);
  EXPECT_THROW(check_text("\xc3\x85"), InvalidArgument);
}

}  // namespace
}  // namespace qgpu::display
