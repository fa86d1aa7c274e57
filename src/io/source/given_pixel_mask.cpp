#include "io/source/given_pixel_mask.hpp"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <iterator>
#include <sstream>

#include "core/checked.hpp"
#include "core/error.hpp"
#include "core/regular_file.hpp"
#include "io/npy/npy_reader.hpp"

namespace qgpu::io {

namespace {

constexpr std::uint64_t kMaxMaskFileBytes = std::uint64_t(1) << 31;

std::string shape_text(const std::vector<std::uint64_t>& s) {
  std::string t = "(";
  for (std::size_t i = 0; i < s.size(); ++i) t += (i ? ", " : "") + std::to_string(s[i]);
  return t + (s.size() == 1 ? ",)" : ")");
}

GivenPixelMask from_npy(const std::string& path, const std::vector<std::uint8_t>& bytes, const std::string& where) {
  const npy::NpyHeader h = npy::parse_header(bytes.data(), bytes.size(), where);
  const std::string& d = h.descr;
  const bool is_int = d.size() == 3 && std::string("<>|=").find(d[0]) != std::string::npos &&
                      (d[1] == 'i' || d[1] == 'u') && std::string("1248").find(d[2]) != std::string::npos;
  const bool is_bool = d == "|b1";
  if (!is_int && !is_bool)
    throw DTypeError(where + " holds dtype '" + d + "'; a pixel mask holds integers or booleans (nonzero = bad pixel)");
  const std::uint64_t item = is_bool ? 1 : std::uint64_t(d[2] - '0');
  std::uint64_t n = 1;
  for (std::uint64_t v : h.shape) n = checked_mul(n, v, where + " shape");
  const std::uint64_t data = checked_mul(n, item, where + " size");
  if (checked_add(h.data_offset, data, where + " size") > bytes.size())
    throw FormatError(where + ": the header announces " + std::to_string(data) + " bytes of data; the file has " +
                      std::to_string(bytes.size() - h.data_offset) + " after the header (truncated file)");
  GivenPixelMask m;
  m.source = path;
  m.shape = h.shape;
  m.bad.resize(n);
  const std::uint8_t* v = bytes.data() + h.data_offset;
  // nonzero in any byte order: any byte nonzero. Fortran order of a 2D array: element (r, c) stored at r + R * c.
  const bool transpose = h.fortran_order && h.shape.size() == 2;
  if (h.fortran_order && h.shape.size() > 2)
    throw FormatError(where + " is a " + std::to_string(h.shape.size()) + "-dimensional array in Fortran order; a "
                      "pixel mask is 2D (det_rows, det_cols)");
  const std::uint64_t R = transpose ? h.shape[0] : 0, C = transpose ? h.shape[1] : 0;
  for (std::uint64_t i = 0; i < n; ++i) {
    bool nz = false;
    for (std::uint64_t k = 0; k < item; ++k) nz |= v[i * item + k] != 0;
    const std::uint64_t dst = transpose ? (i % R) * C + i / R : i;
    m.bad[dst] = nz;
  }
  return m;
}

GivenPixelMask from_text(const std::string& path, const std::vector<std::uint8_t>& bytes, const std::string& where) {
  GivenPixelMask m;
  m.source = path;
  std::istringstream in(std::string(bytes.begin(), bytes.end()));
  std::string line;
  for (std::size_t no = 1; std::getline(in, line); ++no) {
    const std::string text = line.substr(0, line.find('#'));
    std::string s = text;
    std::replace(s.begin(), s.end(), ',', ' ');
    std::istringstream f(s);
    std::string a, b, extra;
    f >> a >> b >> extra;
    if (a.empty()) continue;
    auto number = [&](const std::string& t) {
      const auto digit = [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; };
      if (t.empty() || t.size() > 18 || !std::all_of(t.begin(), t.end(), digit))
        throw FormatError(where + " line " + std::to_string(no) + ": expected 'row col' (two non-negative integers), "
                          "got '" + (line.size() > 60 ? line.substr(0, 60) + "..." : line) +
                          "' (a mask file is a .npy or a text list of bad pixels)");
      return std::stoull(t);
    };
    if (b.empty() || !extra.empty()) number("");
    m.pixels.emplace_back(number(a), number(b));
  }
  return m;
}

}  // namespace

GivenPixelMask read_pixel_mask_file(const std::string& path) {
  const std::string where = "pixel mask '" + path + "'";
  require_readable_regular_file(path, "pixel mask file");
  std::ifstream f(path, std::ios::binary);
  if (!f) throw IoError("cannot open " + where);
  f.seekg(0, std::ios::end);
  const std::streamoff size = f.tellg();
  if (size < 0) throw IoError("cannot read " + where);
  if (std::uint64_t(size) > kMaxMaskFileBytes)
    throw FormatError(where + " is " + std::to_string(size) + " bytes, beyond any detector's mask");
  f.seekg(0);
  std::vector<std::uint8_t> bytes(static_cast<std::size_t>(size));
  if (!f.read(reinterpret_cast<char*>(bytes.data()), size)) throw IoError("cannot read " + where);
  if (npy::is_npy_head(bytes.data(), bytes.size())) return from_npy(path, bytes, where);
  return from_text(path, bytes, where);
}

std::vector<std::uint32_t> GivenPixelMask::bad_pixels(std::size_t det_rows, std::size_t det_cols,
                                                       const std::string& data) const {
  const std::string where = source == "python array" ? "the pixel mask array" : "pixel mask '" + source + "'";
  const std::string detector = std::to_string(det_rows) + " x " + std::to_string(det_cols);
  if (checked_mul(std::uint64_t(det_rows), std::uint64_t(det_cols), where) > UINT32_MAX)
    throw FormatError(data + ": detector too large for 32-bit pixel indices");
  std::vector<std::uint32_t> out;
  if (shape.empty() && bad.empty()) {  // a text list of pixels
    for (const auto& [r, c] : pixels) {
      if (r >= det_rows || c >= det_cols)
        throw InvalidArgument(where + " lists pixel (" + std::to_string(r) + ", " + std::to_string(c) +
                              "), outside the detector of " + data + " (" + detector + ")");
      out.push_back(std::uint32_t(r * det_cols + c));
    }
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
  }
  if (shape.size() != 2 || shape[0] != det_rows || shape[1] != det_cols)
    throw InvalidArgument(where + " has shape " + shape_text(shape) + "; the detector of " + data +
                          " stores frames of " + detector + " pixels (the mask is of the full stored frame)");
  for (std::size_t i = 0; i < bad.size(); ++i)
    if (bad[i]) out.push_back(std::uint32_t(i));
  return out;
}

}  // namespace qgpu::io
