#include <gtest/gtest.h>
#include <png.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "core/error.hpp"
#include "display/display.hpp"
#include "test_images.hpp"

namespace qgpu::display {
namespace {

std::filesystem::path tmp_dir() {
  const char* env = std::getenv("QGPU_TEST_TMP");
  std::filesystem::path p = env ? std::filesystem::path(env) : std::filesystem::temp_directory_path() / "qgpu-test";
  p /= "display";
  std::filesystem::create_directories(p);
  return p;
}

std::vector<unsigned char> file_bytes(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

std::uint32_t be32(const std::vector<unsigned char>& b, std::size_t at) {
  return (std::uint32_t(b[at]) << 24) | (std::uint32_t(b[at + 1]) << 16) | (std::uint32_t(b[at + 2]) << 8) | b[at + 3];
}

// Reads a PNG back with libpng's simplified API in the given format.
std::vector<std::uint8_t> read_png(const std::filesystem::path& p, png_uint_32 format, png_uint_32& w, png_uint_32& h) {
  png_image img{};
  img.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_file(&img, p.c_str())) ADD_FAILURE() << img.message;
  img.format = format;
  std::vector<std::uint8_t> buf(PNG_IMAGE_SIZE(img));
  if (!png_image_finish_read(&img, nullptr, buf.data(), 0, nullptr)) ADD_FAILURE() << img.message;
  w = img.width;
  h = img.height;
  return buf;
}

TEST(DisplayPng, RgbaRoundTrip) {
  Rgba img;
  img.rows = 2;
  img.cols = 3;
  for (int i = 0; i < 24; ++i) img.rgba.push_back(static_cast<std::uint8_t>(i * 10 + 5));
  const auto path = tmp_dir() / "rgba.png";
  std::filesystem::remove(path);
  write_png(path.string(), img);
  const std::vector<unsigned char> b = file_bytes(path);
  ASSERT_GT(b.size(), 33u);
  const unsigned char sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  EXPECT_TRUE(std::equal(sig, sig + 8, b.begin()));
  EXPECT_EQ(std::string(b.begin() + 12, b.begin() + 16), "IHDR");
  EXPECT_EQ(be32(b, 16), 3u);  // width
  EXPECT_EQ(be32(b, 20), 2u);  // height
  EXPECT_EQ(b[24], 8);         // bit depth
  EXPECT_EQ(b[25], 6);         // colour type RGBA
  png_uint_32 w = 0, h = 0;
  EXPECT_EQ(read_png(path, PNG_FORMAT_RGBA, w, h), img.rgba);
  EXPECT_EQ(w, 3u);
  EXPECT_EQ(h, 2u);
}

TEST(DisplayPng, RenderedImageRoundTrip) {
  const Rgba out = render(test::wide_range_image(17, 9, 11), DisplayOptions{});
  const auto path = tmp_dir() / "render.png";
  write_png(path.string(), out);
  png_uint_32 w = 0, h = 0;
  EXPECT_EQ(read_png(path, PNG_FORMAT_RGBA, w, h), out.rgba);
  EXPECT_EQ(w, 9u);
  EXPECT_EQ(h, 17u);
}

TEST(DisplayPng, GrayRoundTrip) {
  Image<std::uint8_t> img;
  img.rows = 3;
  img.cols = 2;
  img.data = {0, 50, 100, 150, 200, 255};
  const auto path = tmp_dir() / "gray.png";
  write_png_gray(path.string(), img);
  const std::vector<unsigned char> b = file_bytes(path);
  ASSERT_GT(b.size(), 33u);
  EXPECT_EQ(b[25], 0);  // colour type gray
  png_uint_32 w = 0, h = 0;
  EXPECT_EQ(read_png(path, PNG_FORMAT_GRAY, w, h), img.data);
  EXPECT_EQ(w, 2u);
  EXPECT_EQ(h, 3u);
}

TEST(DisplayPng, UnwritablePathRaisesIoErrorNamingIt) {
  Rgba img;
  img.rows = img.cols = 1;
  img.rgba = {1, 2, 3, 4};
  const std::string path = (tmp_dir() / "no-such-dir" / "x.png").string();
  try {
    write_png(path, img);
    FAIL() << "expected IoError";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
}

TEST(DisplayPng, InconsistentImageRaises) {
  Rgba img;
  img.rows = 2;
  img.cols = 2;
  img.rgba = {1, 2, 3};
  EXPECT_THROW(write_png((tmp_dir() / "bad.png").string(), img), InvalidArgument);
  EXPECT_THROW(write_png((tmp_dir() / "empty.png").string(), Rgba{}), InvalidArgument);
}

}  // namespace
}  // namespace qgpu::display
