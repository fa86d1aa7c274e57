#include "io/tiff/write_tiff.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "core/atomic_output.hpp"
#include "core/error.hpp"
#include "io/emd/write_emd.hpp"

namespace qgpu::io {

namespace {

void put16(std::string& b, std::uint16_t v) { b.append(reinterpret_cast<const char*>(&v), 2); }  // host: little-endian
void put32(std::string& b, std::uint32_t v) { b.append(reinterpret_cast<const char*>(&v), 4); }

// A positive number as a TIFF RATIONAL (numerator, denominator), both < 2^32.
std::pair<std::uint32_t, std::uint32_t> rational(double v) {
  std::uint64_t den = 1000000;
  while (den > 1 && v * double(den) > 4.0e9) den /= 10;
  double num = std::round(v * double(den));
  if (num < 1) num = 1;
  if (num > 4.0e9) num = 4.0e9;
  return {std::uint32_t(num), std::uint32_t(den)};
}

}  // namespace

void write_tiff_f32(const std::string& path, std::size_t rows, std::size_t cols, const float* values,
                    double pixel_size, const std::string& unit) {
  static_assert(sizeof(float) == 4);
  if (rows == 0 || cols == 0 || rows > 0xffffffffu || cols > 0xffffffffu)
    throw InvalidArgument("a TIFF image needs 1 .. 2^32-1 rows and columns");
  const std::uint64_t data_bytes = std::uint64_t(rows) * cols * 4;
  if (data_bytes > 0xffff0000u) throw InvalidArgument("a baseline TIFF holds less than 4 GiB");
  float lo = 0, hi = 0;
  bool any = false;
  for (std::size_t i = 0; i < rows * cols; ++i)
    if (std::isfinite(values[i])) {
      lo = any ? std::min(lo, values[i]) : values[i];
      hi = any ? std::max(hi, values[i]) : values[i];
      any = true;
    }
  const bool calibrated = pixel_size > 0 && std::isfinite(pixel_size) && !unit.empty();
  char mm[96];
  std::snprintf(mm, sizeof mm, "min=%.9g\nmax=%.9g\n", double(lo), double(hi));
  std::string desc = "ImageJ=1.11a\n" + (calibrated ? "unit=" + unit + "\n" : std::string()) + mm;
  desc.push_back('\0');
  // Layout: header (8) | description | 2 rationals (16) | IFD | pixel data.
  const std::uint32_t desc_at = 8, res_at = desc_at + std::uint32_t(desc.size() + (desc.size() & 1));
  const std::uint32_t ifd_at = res_at + 16;
  struct Entry {
    std::uint16_t tag, type;
    std::uint32_t count, value;
  };
  std::vector<Entry> e;
  const auto [rn, rd] = rational(calibrated ? 1.0 / pixel_size : 1.0);
  const std::uint16_t n_entries = calibrated ? 14 : 11;
  const std::uint32_t data_at = ifd_at + 2 + 12 * n_entries + 4;
  e.push_back({256, 4, 1, std::uint32_t(cols)});            // ImageWidth
  e.push_back({257, 4, 1, std::uint32_t(rows)});            // ImageLength
  e.push_back({258, 3, 1, 32});                             // BitsPerSample
  e.push_back({259, 3, 1, 1});                              // Compression: none
  e.push_back({262, 3, 1, 1});                              // Photometric: BlackIsZero
  e.push_back({270, 2, std::uint32_t(desc.size()), desc_at});  // ImageDescription (ImageJ)
  e.push_back({273, 4, 1, data_at});                        // StripOffsets
  e.push_back({277, 3, 1, 1});                              // SamplesPerPixel
  e.push_back({278, 4, 1, std::uint32_t(rows)});            // RowsPerStrip
  e.push_back({279, 4, 1, std::uint32_t(data_bytes)});      // StripByteCounts
  if (calibrated) {
    e.push_back({282, 5, 1, res_at});                       // XResolution: pixels per unit
    e.push_back({283, 5, 1, res_at + 8});                   // YResolution
    e.push_back({296, 3, 1, 1});                            // ResolutionUnit: none (ImageJ takes the unit above)
  }
  e.push_back({339, 3, 1, 3});                              // SampleFormat: IEEE float
  if (e.size() != n_entries) throw Error("TIFF writer: entry count");
  std::string b;
  b.reserve(data_at + data_bytes);
  b += "II";
  put16(b, 42);
  put32(b, ifd_at);
  b += desc;
  if (desc.size() & 1) b.push_back('\0');
  put32(b, rn);
  put32(b, rd);
  put32(b, rn);
  put32(b, rd);
  put16(b, n_entries);
  for (const Entry& x : e) {
    put16(b, x.tag);
    put16(b, x.type);
    put32(b, x.count);
    if (x.type == 3 && x.count == 1) {  // SHORT values are left-justified in the 4-byte field
      put16(b, std::uint16_t(x.value));
      put16(b, 0);
    } else {
      put32(b, x.value);
    }
  }
  put32(b, 0);  // no next IFD
  if (b.size() != data_at) throw Error("TIFF writer: layout");
  b.append(reinterpret_cast<const char*>(values), std::size_t(data_bytes));
  write_file_atomically(path, b, "TIFF output");
}

void write_products_emd(const std::string& path, const std::vector<ProductImage>& products,
                        const nlohmann::json& calibration) {
  EmdFileSpec spec;
  spec.root = "quantem_products";
  spec.calibration = calibration;
  for (const ProductImage& p : products) {
    if (p.values.size() != p.rows * p.cols)
      throw InvalidArgument("product '" + p.name + "' has " + std::to_string(p.values.size()) + " values for " +
                            std::to_string(p.rows) + " x " + std::to_string(p.cols));
    EmdArraySpec a;
    a.name = p.name;
    a.python_class = "Array";
    a.dims = {p.rows, p.cols};
    a.dtype = DType::f32;
    a.units = "";
    const bool cal = p.pixel_size > 0 && !p.unit.empty();
    a.dim_names = {"rows", "cols"};
    a.dim_units = {cal ? p.unit : "pixels", cal ? p.unit : "pixels"};
    a.dim_steps = {cal ? p.pixel_size : 1.0, cal ? p.pixel_size : 1.0};
    a.data = p.values.data();
    if (!p.provenance.is_null()) a.attributes["quantem_provenance"] = p.provenance.dump();
    spec.arrays.push_back(std::move(a));
  }
  write_emd(path, spec, "products EMD output");
}

}  // namespace qgpu::io
