#include "display/png.hpp"

#include <png.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "core/atomic_output.hpp"
#include "core/error.hpp"

namespace qgpu::display {

namespace {

struct PngError {
  char message[256] = "";
};

void on_error(png_structp png, png_const_charp msg) {
  auto* e = static_cast<PngError*>(png_get_error_ptr(png));
  std::snprintf(e->message, sizeof e->message, "%s", msg);
  png_longjmp(png, 1);
}

void on_warning(png_structp, png_const_charp) {}

// libpng reports errors by longjmp, which must not cross C++ objects with destructors: this function holds
// only plain C state. Returns false with err->message set on failure.
bool write_rows(std::FILE* f, png_uint_32 width, png_uint_32 height, int color_type, std::size_t channels,
                const std::uint8_t* data, PngError* err) {
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, err, on_error, on_warning);
  if (!png) {
    std::snprintf(err->message, sizeof err->message, "libpng could not allocate a writer");
    return false;
  }
  png_infop info = png_create_info_struct(png);
  if (!info) {
    png_destroy_write_struct(&png, nullptr);
    std::snprintf(err->message, sizeof err->message, "libpng could not allocate an info struct");
    return false;
  }
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_write_struct(&png, &info);
    return false;
  }
  png_init_io(png, f);
  png_set_IHDR(png, info, width, height, 8, color_type, PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
               PNG_FILTER_TYPE_DEFAULT);
  png_write_info(png, info);
  const std::size_t row_bytes = static_cast<std::size_t>(width) * channels;
  for (png_uint_32 r = 0; r < height; ++r) png_write_row(png, data + r * row_bytes);
  png_write_end(png, nullptr);
  png_destroy_write_struct(&png, &info);
  return true;
}

void write(const std::string& path, std::size_t rows, std::size_t cols, std::size_t channels, int color_type,
           const std::vector<std::uint8_t>& data) {
  if (rows == 0 || cols == 0) throw InvalidArgument("write_png '" + path + "': image is empty");
  if (data.size() != rows * cols * channels)
    throw InvalidArgument("write_png '" + path + "': " + std::to_string(data.size()) + " bytes for " +
                          std::to_string(rows) + "x" + std::to_string(cols) + "x" + std::to_string(channels));
  if (rows > PNG_UINT_31_MAX || cols > PNG_UINT_31_MAX)
    throw InvalidArgument("write_png '" + path + "': image too large for PNG");
  // Through a temporary file beside `path`, renamed over it only when it is absent or a regular file.
  write_file_atomically(path, [&](std::FILE* f) {
    PngError err;
    if (!write_rows(f, static_cast<png_uint_32>(cols), static_cast<png_uint_32>(rows), color_type, channels,
                    data.data(), &err))
      throw IoError("cannot write PNG '" + path + "': " + std::string(err.message));
  }, "PNG output");
}

}  // namespace

void write_png(const std::string& path, const Rgba& img) {
  write(path, img.rows, img.cols, 4, PNG_COLOR_TYPE_RGBA, img.rgba);
}

void write_png_gray(const std::string& path, const Image<std::uint8_t>& img) {
  write(path, img.rows, img.cols, 1, PNG_COLOR_TYPE_GRAY, img.data);
}

}  // namespace qgpu::display
