#include "io/npy/npy_reader.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>

#include "core/checked.hpp"
#include "core/error.hpp"
#include "io/hdf5/scan_shape.hpp"

namespace qgpu::io::npy {

namespace {

constexpr std::uint8_t kMagic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
constexpr std::uint64_t kMaxHeader = std::uint64_t(1) << 20;  // numpy itself refuses headers above 10000 bytes

// A tiny reader of the header's Python dict literal: {'descr': '<u2', 'fortran_order': False, 'shape': (2, 3), }
struct DictParser {
  const std::string& s;
  const std::string& where;
  std::size_t i = 0;
  [[noreturn]] void fail(const std::string& what) const {
    throw FormatError(where + ": malformed .npy header (" + what + " at byte " + std::to_string(i) + " of '" + s +
                      "')");
  }
  void space() {
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  }
  bool eat(char c) {
    space();
    if (i < s.size() && s[i] == c) {
      ++i;
      return true;
    }
    return false;
  }
  void expect(char c) {
    if (!eat(c)) fail(std::string("expected '") + c + "'");
  }
  std::string string_literal() {
    space();
    if (i >= s.size() || (s[i] != '\'' && s[i] != '"')) fail("expected a string");
    const char q = s[i++];
    const std::size_t start = i;
    while (i < s.size() && s[i] != q) {
      if (s[i] == '\\') fail("escapes are not expected");
      ++i;
    }
    if (i >= s.size()) fail("unterminated string");
    return s.substr(start, i++ - start);
  }
  bool boolean() {
    space();
    if (s.compare(i, 4, "True") == 0) return i += 4, true;
    if (s.compare(i, 5, "False") == 0) return i += 5, false;
    fail("expected True or False");
  }
  std::uint64_t integer() {
    space();
    if (i >= s.size() || !std::isdigit(static_cast<unsigned char>(s[i]))) fail("expected a non-negative integer");
    std::uint64_t v = 0;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) {
      v = checked_add(checked_mul(v, std::uint64_t(10), where + " .npy shape"), std::uint64_t(s[i] - '0'),
                      where + " .npy shape");
      ++i;
    }
    if (i < s.size() && (s[i] == 'L' || s[i] == 'l')) ++i;  // Python 2 writers
    return v;
  }
  std::vector<std::uint64_t> tuple() {
    expect('(');
    std::vector<std::uint64_t> v;
    if (eat(')')) return v;
    while (true) {
      v.push_back(integer());
      if (v.size() > 32) fail("more than 32 dimensions");
      if (eat(')')) return v;
      expect(',');
      if (eat(')')) return v;
    }
  }
};

}  // namespace

bool is_npy_head(const std::uint8_t* head, std::size_t n) { return n >= 6 && std::memcmp(head, kMagic, 6) == 0; }

std::uint64_t header_bytes_needed(const std::uint8_t* h, std::size_t n, const std::string& where) {
  if (!is_npy_head(h, n)) throw FormatError(where + " is not a .npy file (no \\x93NUMPY magic)");
  if (n < 10) throw FormatError(where + ": .npy header truncated (" + std::to_string(n) + " bytes)");
  const unsigned major = h[6];
  if (major == 1) return 10 + (std::uint64_t(h[8]) | std::uint64_t(h[9]) << 8);
  if (major == 2 || major == 3) {
    if (n < 12) throw FormatError(where + ": .npy header truncated (" + std::to_string(n) + " bytes)");
    const std::uint64_t len =
        std::uint64_t(h[8]) | std::uint64_t(h[9]) << 8 | std::uint64_t(h[10]) << 16 | std::uint64_t(h[11]) << 24;
    if (len > kMaxHeader)
      throw FormatError(where + ": .npy header length " + std::to_string(len) + " bytes is beyond any array header");
    return 12 + len;
  }
  throw FormatError(where + ": .npy format version " + std::to_string(major) + "." + std::to_string(h[7]) +
                    " is not one of 1.0, 2.0, 3.0");
}

NpyHeader parse_header(const std::uint8_t* h, std::size_t n, const std::string& where) {
  NpyHeader out;
  out.data_offset = header_bytes_needed(h, n, where);
  if (out.data_offset > n)
    throw FormatError(where + ": .npy header of " + std::to_string(out.data_offset) + " bytes, the file has " +
                      std::to_string(n));
  out.major = h[6];
  out.minor = h[7];
  const std::size_t start = out.major == 1 ? 10 : 12;
  const std::string dict(reinterpret_cast<const char*>(h) + start, std::size_t(out.data_offset) - start);
  for (char c : dict)
    if (static_cast<unsigned char>(c) >= 0x80 && out.major < 3)
      throw FormatError(where + ": .npy header holds non-ASCII bytes (allowed from format 3.0 only)");
  DictParser p{dict, where};
  p.expect('{');
  bool has_descr = false, has_order = false, has_shape = false;
  while (!p.eat('}')) {
    const std::string key = p.string_literal();
    p.expect(':');
    if (key == "descr") {
      out.descr = p.string_literal();
      has_descr = true;
    } else if (key == "fortran_order") {
      out.fortran_order = p.boolean();
      has_order = true;
    } else if (key == "shape") {
      out.shape = p.tuple();
      has_shape = true;
    } else {
      p.fail("unknown key '" + key + "'");
    }
    if (!p.eat(',')) {
      p.expect('}');
      break;
    }
  }
  if (!has_descr || !has_order || !has_shape)
    throw FormatError(where + ": .npy header lacks " +
                      std::string(!has_descr ? "'descr'" : !has_order ? "'fortran_order'" : "'shape'"));
  return out;
}

DType dtype_of_descr(const std::string& descr, bool& big_endian, const std::string& where) {
  if (descr.size() < 3 || std::string("<>|=").find(descr[0]) == std::string::npos)
    throw DTypeError(where + " holds dtype '" + descr + "', which is not a plain numeric dtype");
  const char order = descr[0], kind = descr[1];
  const std::string size = descr.substr(2);
  big_endian = order == '>';
  if (kind == 'u' && (size == "1" || size == "2" || size == "4"))
    return size == "1" ? DType::u8 : size == "2" ? DType::u16 : DType::u32;
  if (kind == 'i' && (size == "1" || size == "2" || size == "4"))
    return size == "1" ? DType::i8 : size == "2" ? DType::i16 : DType::i32;
  if (kind == 'f' && size == "4") return DType::f32;
  if (kind == 'f' && size == "8") return DType::f64;
  throw DTypeError(where + " holds dtype '" + descr + "'; expected uint8/16/32, int8/16/32, float32 or float64");
}

FileInfo inspect_npy(const std::string& path, const SourceOptions& o) {
  const std::string where = "'" + path + "'";
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) throw IoError("cannot open " + where + ": " + std::strerror(errno));
  std::vector<std::uint8_t> head(12);
  struct stat st {};
  ssize_t got = ::fstat(fd, &st) == 0 ? ::pread(fd, head.data(), head.size(), 0) : -1;
  std::uint64_t need = 0;
  try {
    if (got < 0) throw IoError("cannot read " + where + ": " + std::strerror(errno));
    head.resize(std::size_t(got));
    need = header_bytes_needed(head.data(), head.size(), where);
    if (need > std::uint64_t(st.st_size))
      throw FormatError(where + ": .npy header of " + std::to_string(need) + " bytes, the file has " +
                        std::to_string(st.st_size) + " (truncated file)");
    head.resize(std::size_t(need));
    got = ::pread(fd, head.data(), head.size(), 0);
    if (got != ssize_t(need)) throw IoError("cannot read the .npy header of " + where);
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);
  const NpyHeader h = parse_header(head.data(), head.size(), where);

  FileInfo fi;
  fi.path = path;
  fi.dataset_path = "";
  fi.source_kind = ".npy " + std::to_string(h.major) + "." + std::to_string(h.minor);
  bool big = false;
  const DType stored = dtype_of_descr(h.descr, big, where);
  fi.dtype = stored == DType::f64 ? DType::f32 : stored;  // float64 is read as float32 (FileInfo::stored_as)
  if (stored != fi.dtype) fi.stored_as = stored;
  if (h.shape.size() != 3 && h.shape.size() != 4)
    throw FormatError(where + " holds a " + std::to_string(h.shape.size()) +
                      "-dimensional array; expected 4D (scan_r, scan_c, det_r, det_c) or 3D (frames, det_r, det_c)");
  const std::size_t rank = h.shape.size();
  const std::uint64_t det_r = h.shape[rank - 2], det_c = h.shape[rank - 1];
  if (det_r == 0 || det_c == 0) throw FormatError(where + " has an empty detector");
  const std::uint64_t frames = rank == 4 ? checked_mul(h.shape[0], h.shape[1], where + " frames") : h.shape[0];
  if (frames == 0) throw FormatError(where + " holds no frames");
  const std::uint64_t frame_bytes =
      checked_mul(checked_mul(det_r, det_c, where + " frame"), std::uint64_t(dtype_size(stored)), where + " frame");
  const std::uint64_t data_bytes = checked_mul(frames, frame_bytes, where + " data size");
  const std::uint64_t file_bytes = std::uint64_t(st.st_size);
  if (checked_add(h.data_offset, data_bytes, where + " size") > file_bytes)
    throw FormatError(where + ": the header announces " + std::to_string(data_bytes) + " bytes of data after " +
                      std::to_string(h.data_offset) + " header bytes; the file has " + std::to_string(file_bytes) +
                      " (truncated file)");
  if (h.fortran_order && fi.stored_as)
    throw DTypeError(where + " is a Fortran-order " + dtype_name(*fi.stored_as) + " array; Fortran order is read for "
                     "elements read as stored (write it as float32, or in C order)");
  if (h.fortran_order && rank == 4 && o.scan_rows && (o.scan_rows != h.shape[0] || o.scan_cols != h.shape[1]))
    throw FormatError(where + " is a 4D Fortran-order array of scan " + std::to_string(h.shape[0]) + " x " +
                      std::to_string(h.shape[1]) + "; a different scan shape (" + std::to_string(o.scan_rows) + " x " +
                      std::to_string(o.scan_cols) + ") is not read from Fortran order: give none, or write the file "
                      "in C order");
  fi.dims.assign(h.shape.begin(), h.shape.end());
  ScanShapeHints hints;
  hints.given_rows = o.scan_rows;
  hints.given_cols = o.scan_cols;
  if (rank == 4) hints.dataset_dims = {std::size_t(h.shape[0]), std::size_t(h.shape[1])};
  resolve_scan_shape_or_describe(fi, frames, std::size_t(det_r), std::size_t(det_c), hints, o, where);
  fi.shape.nbytes(dtype_size(fi.dtype));
  fi.codec.kind = FrameCodecKind::plain;
  fi.byte_order = big && dtype_size(stored) > 1 ? "big" : "little";
  fi.precision = 8 * dtype_size(stored);
  fi.records.files = {path};
  if (h.fortran_order) {  // every frame scattered over the file: loaded by the transposed loaders, not as records
    fi.transposed = {true, h.data_offset, rank == 4};
    fi.source_kind += ", Fortran order";
  } else {
    fi.records.runs = {{0, 0, frames, h.data_offset, frame_bytes, frame_bytes}};
  }
  fi.one_frame_per_chunk = true;
  fi.chunks_expected = fi.chunks_written = std::size_t(frames);
  fi.ready = true;
  fi.metadata = {{"npy_version", std::to_string(h.major) + "." + std::to_string(h.minor)},
                 {"descr", h.descr},
                 {"shape", h.shape},
                 {"fortran_order", h.fortran_order},
                 {"data_offset", h.data_offset}};
  return fi;
}

}  // namespace qgpu::io::npy
