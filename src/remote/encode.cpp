#include "remote/encode.hpp"

#include <png.h>

#include <cmath>
#include <csetjmp>

#include "core/error.hpp"

namespace qgpu::remote {

namespace {
constexpr std::uint64_t kExact = std::uint64_t(1) << 53;  // integers a JSON double holds exactly
}  // namespace

nlohmann::json exact_u64_array(const std::vector<std::uint64_t>& v) {
  nlohmann::json a = nlohmann::json::array();
  for (std::uint64_t x : v) {
    if (x <= kExact)
      a.push_back(x);
    else
      a.push_back(std::to_string(x));
  }
  return a;
}

nlohmann::json image_json(const Image<std::uint64_t>& img) {
  return {{"rows", img.rows}, {"cols", img.cols}, {"dtype", "uint64"}, {"data", exact_u64_array(img.data)},
          {"provenance", img.provenance.to_json()}};
}

nlohmann::json image_json(const Image<std::int64_t>& img) {
  nlohmann::json a = nlohmann::json::array();
  for (std::int64_t x : img.data) {
    if (x <= std::int64_t(kExact) && x >= -std::int64_t(kExact))
      a.push_back(x);
    else
      a.push_back(std::to_string(x));
  }
  return {{"rows", img.rows}, {"cols", img.cols}, {"dtype", "int64"}, {"data", a},
          {"provenance", img.provenance.to_json()}};
}

namespace {

template <class F> nlohmann::json float_image_json(const Image<F>& img) {
  nlohmann::json a = nlohmann::json::array();
  for (F x : img.data) {
    if (std::isfinite(x))
      a.push_back(x);
    else
      a.push_back(nullptr);
  }
  return {{"rows", img.rows}, {"cols", img.cols}, {"dtype", dtype_name(dtype_of<F>::value)}, {"data", a},
          {"provenance", img.provenance.to_json()}};
}

}  // namespace

nlohmann::json image_json(const Image<float>& img) { return float_image_json(img); }
nlohmann::json image_json(const Image<double>& img) { return float_image_json(img); }

namespace {

void append_bytes(png_structp png, png_bytep data, png_size_t n) {
  static_cast<std::string*>(png_get_io_ptr(png))->append(reinterpret_cast<const char*>(data), n);
}
void no_flush(png_structp) {}
void on_error(png_structp png, png_const_charp msg) {
  *static_cast<std::string*>(png_get_error_ptr(png)) = msg;
  png_longjmp(png, 1);
}
void on_warning(png_structp, png_const_charp) {}

}  // namespace

std::string png_bytes(const display::Rgba& img) {
  if (img.rows == 0 || img.cols == 0 || img.rgba.size() != img.rows * img.cols * 4)
    throw InvalidArgument("cannot encode an empty or inconsistent RGBA picture as PNG");
  std::string out, err;
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, &err, on_error, on_warning);
  if (!png) throw Error("libpng: cannot create a write struct");
  png_infop info = png_create_info_struct(png);
  if (!info) {
    png_destroy_write_struct(&png, nullptr);
    throw Error("libpng: cannot create an info struct");
  }
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_write_struct(&png, &info);
    throw Error("libpng: " + err);
  }
  png_set_write_fn(png, &out, append_bytes, no_flush);
  png_set_IHDR(png, info, png_uint_32(img.cols), png_uint_32(img.rows), 8, PNG_COLOR_TYPE_RGBA, PNG_INTERLACE_NONE,
               PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  // Interactive responses: zlib level 1 with the one SUB filter. Measured on a 512x512 colour-mapped noisy image
  // (bench/bench_serve.py "png" cases, docs/benchmarks.md): several times faster than level 3 with libpng's
  // adaptive choice of all five filters per row, and no larger (noise does not compress either way).
  png_set_compression_level(png, 1);
  png_set_filter(png, PNG_FILTER_TYPE_BASE, PNG_FILTER_SUB);
  png_write_info(png, info);
  for (std::size_t r = 0; r < img.rows; ++r)
    png_write_row(png, const_cast<png_bytep>(img.rgba.data() + r * img.cols * 4));
  png_write_end(png, nullptr);
  png_destroy_write_struct(&png, &info);
  return out;
}

}  // namespace qgpu::remote
