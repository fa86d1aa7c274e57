// The service's PNG answers (remote::png_bytes, deflated in bands on threads with zlib) read back by libpng:
// every pixel as given, RGB when all are opaque, RGBA otherwise, any size.
#include <gtest/gtest.h>
#include <png.h>

#include <cmath>
#include <random>

#include "core/error.hpp"
#include "display/display.hpp"
#include "remote/encode.hpp"

namespace qgpu::remote {
namespace {

display::Rgba random_picture(std::size_t rows, std::size_t cols, bool opaque, unsigned seed) {
  display::Rgba img;
  img.rows = rows;
  img.cols = cols;
  img.rgba.resize(rows * cols * 4);
  std::mt19937 g(seed);
  for (std::size_t i = 0; i < img.rgba.size(); ++i) img.rgba[i] = std::uint8_t(g());
  for (std::size_t i = 3; i < img.rgba.size(); i += 4)
    if (opaque || i % 28 != 3) img.rgba[i] = 255;  // some transparent pixels unless opaque
  return img;
}

// Decoded by libpng into RGBA (an RGB file gains alpha 255).
std::vector<std::uint8_t> decode(const std::string& bytes, std::size_t& rows, std::size_t& cols) {
  png_image im{};
  im.version = PNG_IMAGE_VERSION;
  EXPECT_NE(png_image_begin_read_from_memory(&im, bytes.data(), bytes.size()), 0) << im.message;
  im.format = PNG_FORMAT_RGBA;
  std::vector<std::uint8_t> px(PNG_IMAGE_SIZE(im));
  EXPECT_NE(png_image_finish_read(&im, nullptr, px.data(), 0, nullptr), 0) << im.message;
  rows = im.height;
  cols = im.width;
  return px;
}

TEST(PngBytes, OpaquePictureIsRgbAndReadsBackExactly) {
  for (auto [r, c] : {std::pair<std::size_t, std::size_t>{1, 1}, {3, 517}, {512, 512}, {77, 2}}) {
    const display::Rgba img = random_picture(r, c, true, unsigned(r * 1000 + c));
    const std::string png = png_bytes(img);
    ASSERT_GT(png.size(), 33u);
    EXPECT_EQ(png.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
    // IHDR data starts at byte 16; the colour type is its 10th byte: a palette for at most 256 colours, else RGB
    EXPECT_EQ(png[25], r * c <= 256 ? 3 : 2) << "colour type of " << r << "x" << c;
    std::size_t rows = 0, cols = 0;
    EXPECT_EQ(decode(png, rows, cols), img.rgba) << r << "x" << c;
    EXPECT_EQ(rows, r);
    EXPECT_EQ(cols, c);
  }
}

TEST(PngBytes, TransparentPixelsKeepAlpha) {
  const display::Rgba img = random_picture(40, 33, false, 7);
  const std::string png = png_bytes(img);
  EXPECT_EQ(png[25], 6) << "colour type";
  std::size_t rows = 0, cols = 0;
  EXPECT_EQ(decode(png, rows, cols), img.rgba);
}

TEST(PngBytes, ColormappedPictureIsAPaletteWithItsTransparency) {
  Image<float> v;
  v.rows = 300;
  v.cols = 257;
  v.data.resize(v.rows * v.cols);
  for (std::size_t i = 0; i < v.data.size(); ++i) v.data[i] = float((i * 7919) % 1000);
  for (bool hole : {false, true}) {
    if (hole) v.data[1234] = std::nanf("");  // drawn transparent black
    const display::Rgba img = display::render(v, display::DisplayOptions{});
    const std::string png = png_bytes(img);
    EXPECT_EQ(png[25], 3) << "colour type";
    EXPECT_EQ(png.find("tRNS") != std::string::npos, hole);
    std::size_t rows = 0, cols = 0;
    EXPECT_EQ(decode(png, rows, cols), img.rgba);
    EXPECT_LT(png.size(), img.rgba.size() / 3);  // one byte per pixel before deflate
  }
}

// The service's PNG path: colormap indices (display::render_indexed) into a palette PNG of the map's colours, read
// back by libpng as exactly render()'s pixels, every scale and colormap; a picture with a non-finite pixel is refused
// (the service renders those in colour).
TEST(PngBytes, IndexedPictureReadsBackAsTheRender) {
  Image<float> v;
  v.rows = 300;
  v.cols = 257;
  v.data.resize(v.rows * v.cols);
  std::mt19937 g(3);
  std::normal_distribution<float> noise(0, 40);
  for (std::size_t i = 0; i < v.data.size(); ++i) v.data[i] = float((i * 7919) % 1000) + noise(g) - 200;
  for (const char* map : {"inferno", "gray", "RdBu_r"})
    for (display::Scale sc : {display::Scale::linear, display::Scale::log, display::Scale::signed_log}) {
      display::DisplayOptions o;
      o.colormap = map;
      o.scale = sc;
      o.lower_percentile = 1;
      o.upper_percentile = 99;
      const display::Indexed ix = display::render_indexed(v, o);
      ASSERT_EQ(ix.transparent, 0u);
      const std::string png = png_bytes(ix, display::colormap(map));
      EXPECT_EQ(png[25], 3) << "colour type";
      std::size_t rows = 0, cols = 0;
      EXPECT_EQ(decode(png, rows, cols), display::render(v, o).rgba) << map << " " << display::scale_name(sc);
      EXPECT_EQ(rows, v.rows);
      EXPECT_EQ(cols, v.cols);
    }
  v.data[1234] = std::nanf("");
  const display::Indexed hole = display::render_indexed(v, display::DisplayOptions{});
  EXPECT_EQ(hole.transparent, 1u);
  EXPECT_THROW(png_bytes(hole, display::colormap("inferno")), InvalidArgument);
}

// Deflate only where it pays (encode.cpp, kStoreAbove): a noisy picture's bytes are stored (the PNG a little larger
// than one byte a pixel, no deflate time), a smooth one's deflated; both read back exactly.
TEST(PngBytes, NoisyPicturesAreStoredSmoothOnesDeflated) {
  Image<float> noisy, smooth;
  noisy.rows = smooth.rows = 512;
  noisy.cols = smooth.cols = 512;
  std::mt19937 g(11);
  std::uniform_real_distribution<float> u(0, 1);
  for (std::size_t i = 0; i < 512 * 512; ++i) {
    noisy.data.push_back(u(g));
    smooth.data.push_back(float(i / 512 + i % 512));
  }
  const std::size_t n = 512 * 512;
  for (const auto* img : {&noisy, &smooth}) {
    const display::Indexed ix = display::render_indexed(*img, display::DisplayOptions{});
    const std::string png = png_bytes(ix, display::colormap(display::DisplayOptions{}.colormap));
    if (img == &noisy) EXPECT_GT(png.size(), n) << "stored";
    else EXPECT_LT(png.size(), n / 2) << "deflated";
    std::size_t rows = 0, cols = 0;
    EXPECT_EQ(decode(png, rows, cols), display::render(*img, display::DisplayOptions{}).rgba);
  }
}

TEST(PngBytes, EmptyOrInconsistentRefused) {
  display::Rgba img;
  EXPECT_THROW(png_bytes(img), InvalidArgument);
  img.rows = 2;
  img.cols = 2;
  img.rgba.resize(15);
  EXPECT_THROW(png_bytes(img), InvalidArgument);
}

}  // namespace
}  // namespace qgpu::remote
