#include "io/sparse/sparse_reader.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>

#include "core/checked.hpp"
#include "core/error.hpp"
#include "io/calibration.hpp"
#include "io/hdf5/h5_handle.hpp"
#include "io/hdf5/scan_shape.hpp"
#include "io/raw/raw_reader.hpp"
#include "io/sparse/sparse_formats.hpp"

namespace qgpu::io::sparse {

namespace {

constexpr std::uint64_t kMaxTomlBytes = 1 << 20;

// An integer attribute; FormatError naming it when absent (required) or not one positive integer.
std::optional<long long> int_attr(hid_t obj, const char* name, const std::string& where, bool required) {
  h5::QuietErrors quiet;
  if (H5Aexists(obj, name) <= 0) {
    if (required) throw FormatError(where + " has no attribute " + name);
    return std::nullopt;
  }
  h5::Handle a(H5Aopen(obj, name, H5P_DEFAULT), H5Aclose);
  h5::Handle t(H5Aget_type(a), H5Tclose);
  h5::Handle sp(H5Aget_space(a), H5Sclose);
  if (H5Tget_class(t) != H5T_INTEGER || H5Sget_simple_extent_npoints(sp) != 1)
    throw FormatError(where + " attribute " + name + " is not one integer");
  long long v = 0;
  if (H5Aread(a, H5T_NATIVE_LLONG, &v) < 0) throw FormatError(where + " attribute " + name + " cannot be read");
  return v;
}

long long positive_attr(hid_t obj, const char* name, const std::string& where) {
  const long long v = *int_attr(obj, name, where, true);
  if (v <= 0 || v > (1ll << 31))
    throw FormatError(where + " attribute " + name + " is " + std::to_string(v) + "; it must be a positive size");
  return v;
}

std::string trim(const std::string& s) {
  std::size_t a = 0, b = s.size();
  while (a < b && (s[a] == ' ' || s[a] == '\t' || s[a] == '\r' || s[a] == '\n')) ++a;
  while (b > a && (s[b - 1] == ' ' || s[b - 1] == '\t' || s[b - 1] == '\r' || s[b - 1] == '\n')) --b;
  return s.substr(a, b - a);
}

// The subset of TOML a LiberTEM descriptor uses: [tables], key = "string" | 'string' | integer | [integers],
// comments. Values are kept as text; FormatError naming the line for anything else.
struct TomlValue {
  std::string text;               // strings
  std::vector<long long> ints;    // integers and arrays of integers
  bool is_string = false, is_array = false;
};
using Toml = std::map<std::string, std::map<std::string, TomlValue>>;

Toml parse_toml(const std::string& text, const std::string& where) {
  Toml out;
  std::string table;
  std::size_t start = 0, line_no = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(start, end - start);
    start = end + 1;
    ++line_no;
    const std::string at = where + " line " + std::to_string(line_no);
    // comments outside strings
    bool in_str = false;
    char q = 0;
    for (std::size_t i = 0; i < line.size(); ++i) {
      if (in_str) {
        if (line[i] == q) in_str = false;
      } else if (line[i] == '"' || line[i] == '\'') {
        in_str = true;
        q = line[i];
      } else if (line[i] == '#') {
        line.resize(i);
        break;
      }
    }
    line = trim(line);
    if (line.empty()) continue;
    if (line.front() == '[') {
      if (line.back() != ']' || line.size() < 3) throw FormatError(at + " '" + line + "' is not a [table] header");
      table = trim(line.substr(1, line.size() - 2));
      continue;
    }
    const auto eq = line.find('=');
    if (eq == std::string::npos) throw FormatError(at + " '" + line + "' is not 'key = value'");
    std::string key = trim(line.substr(0, eq));
    if (key.size() >= 2 && (key.front() == '"' || key.front() == '\'') && key.back() == key.front())
      key = key.substr(1, key.size() - 2);
    const std::string v = trim(line.substr(eq + 1));
    TomlValue val;
    if (v.size() >= 2 && (v.front() == '"' || v.front() == '\'') && v.back() == v.front()) {
      val.is_string = true;
      val.text = v.substr(1, v.size() - 2);
    } else if (!v.empty() && v.front() == '[') {
      if (v.back() != ']') throw FormatError(at + ": the array '" + v + "' does not end on its line");
      val.is_array = true;
      std::string inner = v.substr(1, v.size() - 2);
      std::size_t p = 0;
      while (p <= inner.size()) {
        std::size_t c = inner.find(',', p);
        if (c == std::string::npos) c = inner.size();
        const std::string item = trim(inner.substr(p, c - p));
        p = c + 1;
        if (item.empty()) {
          if (c >= inner.size()) break;
          continue;
        }
        char* e = nullptr;
        errno = 0;
        const long long n = std::strtoll(item.c_str(), &e, 10);
        if (errno || e != item.c_str() + item.size())
          throw FormatError(at + ": '" + item + "' in the array of " + key + " is not an integer");
        val.ints.push_back(n);
      }
    } else {
      char* e = nullptr;
      errno = 0;
      const long long n = std::strtoll(v.c_str(), &e, 10);
      if (v.empty() || errno || e != v.c_str() + v.size())
        throw FormatError(at + ": the value of " + key + " ('" + v + "') is not a string, an integer or an array");
      val.ints = {n};
    }
    out[table][key] = val;
  }
  return out;
}

std::string read_text(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) throw IoError("cannot read '" + path + "'");
  if (std::uint64_t(st.st_size) > kMaxTomlBytes)
    throw FormatError("'" + path + "' has " + std::to_string(st.st_size) + " bytes: not a LiberTEM CSR descriptor");
  std::ifstream f(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

std::uint64_t file_size(const std::string& p, const std::string& what) {
  struct stat st {};
  if (::stat(p.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) throw IoError("the " + what + " '" + p + "' is missing");
  return std::uint64_t(st.st_size);
}

}  // namespace

bool is_stempy_file(const std::string& path) {
  try {
    h5::QuietErrors quiet;
    h5::Handle f = h5::open_file(path);
    return H5Lexists(f, "electron_events", H5P_DEFAULT) > 0 &&
           H5Lexists(f, "electron_events/frames", H5P_DEFAULT) > 0;
  } catch (const Error&) {
    return false;
  }
}

FileInfo inspect_stempy(const std::string& path, const SourceOptions& o) {
  const std::string where = "stempy '" + path + "'";
  h5::Handle f = h5::open_file(path);
  h5::QuietErrors quiet;
  if (H5Lexists(f, "electron_events", H5P_DEFAULT) <= 0 || H5Lexists(f, "electron_events/frames", H5P_DEFAULT) <= 0)
    throw FormatError(where + " has no electron_events/frames");
  h5::Handle fr(H5Dopen2(f, "electron_events/frames", H5P_DEFAULT), H5Dclose);
  if (!fr.valid()) throw FormatError(where + ": electron_events/frames is not a dataset");
  h5::Handle t(H5Dget_type(fr), H5Tclose);
  h5::Handle sp(H5Dget_space(fr), H5Sclose);
  if (H5Tget_class(t) != H5T_VLEN)
    throw FormatError(where + ": electron_events/frames is not variable-length (stempy stores one vlen uint32 array of "
                      "pixel indices per frame)");
  {
    h5::Handle base(H5Tget_super(t), H5Tclose);
    if (H5Tget_class(base) != H5T_INTEGER)
      throw FormatError(where + ": electron_events/frames holds variable-length arrays of non-integers");
  }
  if (H5Sget_simple_extent_ndims(sp) != 1)
    throw FormatError(where + ": electron_events/frames has rank " + std::to_string(H5Sget_simple_extent_ndims(sp)) +
                      "; stempy writes it flattened (1-D)");
  hsize_t n = 0;
  H5Sget_simple_extent_dims(sp, &n, nullptr);
  const std::string fw = where + " electron_events/frames";
  const long long det_r = positive_attr(fr, "Nx", fw), det_c = positive_attr(fr, "Ny", fw);
  if (H5Lexists(f, "electron_events/scan_positions", H5P_DEFAULT) <= 0)
    throw FormatError(where + " has no electron_events/scan_positions (its attributes Nx, Ny are the scan shape)");
  h5::Handle sc(H5Dopen2(f, "electron_events/scan_positions", H5P_DEFAULT), H5Dclose);
  if (!sc.valid()) throw FormatError(where + ": electron_events/scan_positions is not a dataset");
  const std::string sw = where + " electron_events/scan_positions";
  const long long scan_c = positive_attr(sc, "Nx", sw), scan_r = positive_attr(sc, "Ny", sw);
  const long long version = int_attr(f, "version", where + " root", false).value_or(1);
  if (version < 1 || version > 3)
    throw FormatError(where + " root attribute version is " + std::to_string(version) +
                      "; read are stempy sparse versions 1, 2 and 3");
  const std::uint64_t positions = checked_mul(std::uint64_t(scan_r), std::uint64_t(scan_c), where + " scan size");
  const std::uint64_t stored = n;
  FileInfo fi;
  fi.path = path;
  fi.source_kind = "stempy electron events";
  fi.sparse.kind = "stempy";
  fi.sparse.frames_dataset = "/electron_events/frames";
  fi.sparse.positions_dataset = "/electron_events/scan_positions";
  fi.sparse.version = int(version);
  fi.sparse.stored_frames = stored;
  std::uint64_t max_per_position = 0;
  if (version >= 3) {
    if (stored == 0 || stored % positions)
      throw FormatError(where + " holds " + std::to_string(stored) + " frames, not a whole number of frames for each "
                        "of the " + std::to_string(scan_r) + " x " + std::to_string(scan_c) + " scan positions");
    fi.sparse.frames_per_position = stored / positions;
    max_per_position = fi.sparse.frames_per_position;
  } else {
    h5::Handle ssp(H5Dget_space(sc), H5Sclose);
    if (std::uint64_t(H5Sget_simple_extent_npoints(ssp)) != stored)
      throw FormatError(where + ": electron_events/scan_positions has " +
                        std::to_string(H5Sget_simple_extent_npoints(ssp)) + " entries for " + std::to_string(stored) +
                        " frames (version " + std::to_string(version) + ": one position per frame)");
    std::vector<std::uint64_t> pos(stored);
    if (stored && H5Dread(sc, H5T_NATIVE_UINT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, pos.data()) < 0)
      throw FormatError(where + ": electron_events/scan_positions cannot be read as integers");
    std::vector<std::uint32_t> per(positions, 0);
    std::uint64_t missing = positions;
    for (std::uint64_t i = 0; i < stored; ++i) {
      if (pos[i] >= positions)
        throw FormatError(where + ": electron_events/scan_positions[" + std::to_string(i) + "] = " +
                          std::to_string(pos[i]) + " is outside the " + std::to_string(scan_r) + " x " +
                          std::to_string(scan_c) + " scan");
      if (per[pos[i]]++ == 0) --missing;
      max_per_position = std::max<std::uint64_t>(max_per_position, per[pos[i]]);
    }
    fi.metadata["positions_never_scanned"] = missing;
  }
  // The counts of one pixel at one position: at most one per frame (versions 2, 3 store repeated indices as extra
  // frames); version 1 may repeat an index within a frame.
  fi.dtype = version == 1 ? DType::u32 : max_per_position <= 255 ? DType::u8 : max_per_position <= 65535 ? DType::u16
                                                                                                     : DType::u32;
  fi.precision = 8 * dtype_size(fi.dtype);
  fi.dims = {std::size_t(stored), std::size_t(det_r), std::size_t(det_c)};
  ScanShapeHints hints;
  hints.given_rows = o.scan_rows;
  hints.given_cols = o.scan_cols;
  hints.sidecar = {scan_r, scan_c};
  hints.sidecar_source = "stempy scan_positions Ny x Nx";
  resolve_scan_shape_or_describe(fi, positions, std::size_t(det_r), std::size_t(det_c), hints, o, where);
  fi.shape.nbytes(dtype_size(fi.dtype));
  fi.metadata["stempy_version"] = version;
  fi.metadata["stored_frames"] = stored;
  fi.metadata["frames_per_position"] = version >= 3 ? nlohmann::json(fi.sparse.frames_per_position)
                                                    : nlohmann::json("per scan_positions");
  fi.metadata["max_counts_per_pixel"] = version == 1 ? nlohmann::json("unknown (version 1)")
                                                     : nlohmann::json(max_per_position);
  fi.codec.kind = FrameCodecKind::plain;
  fi.one_frame_per_chunk = false;
  fi.chunks_expected = fi.chunks_written = std::size_t(stored);
  fi.ready = true;
  return fi;
}

bool is_csr_head(const std::uint8_t* head, std::size_t n) {
  const std::string s(reinterpret_cast<const char*>(head), n);
  const auto p = s.find("[params]");
  if (p == std::string::npos) return false;
  for (std::size_t i = 0; i < p; ++i)  // only whitespace and comment lines before it
    if (s[i] == '#') {
      while (i < p && s[i] != '\n') ++i;
    } else if (!std::isspace(static_cast<unsigned char>(s[i]))) {
      return false;
    }
  std::string low = s;
  std::transform(low.begin(), low.end(), low.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return low.find("raw_csr") != std::string::npos;
}

FileInfo inspect_csr(const std::string& path, const SourceOptions& o) {
  const std::string where = "LiberTEM CSR descriptor '" + path + "'";
  const Toml toml = parse_toml(read_text(path), where);
  const auto params = toml.find("params");
  if (params == toml.end()) throw FormatError(where + " has no [params] table");
  const auto get = [&](const std::map<std::string, TomlValue>& t, const std::string& table, const char* key) {
    const auto it = t.find(key);
    if (it == t.end()) throw FormatError(where + " [" + table + "] has no " + key);
    return it->second;
  };
  const TomlValue ft = get(params->second, "params", "filetype");
  if (!ft.is_string) throw FormatError(where + " [params] filetype is not a string");
  std::string ftl = ft.text;
  std::transform(ftl.begin(), ftl.end(), ftl.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  if (ftl != "raw_csr") throw FormatError(where + " [params] filetype is '" + ft.text + "', not 'raw_csr'");
  const auto shape2 = [&](const char* key) {
    const TomlValue v = get(params->second, "params", key);
    if (!v.is_array || v.ints.size() != 2 || v.ints[0] <= 0 || v.ints[1] <= 0)
      throw FormatError(where + " [params] " + key + " is not two positive integers [rows, cols]" +
                        (v.is_array && v.ints.size() == 1 ? " (a 1-D shape: give two)" : ""));
    return std::pair<std::uint64_t, std::uint64_t>(v.ints[0], v.ints[1]);
  };
  const auto nav = shape2("nav_shape"), sig = shape2("sig_shape");
  const auto table = toml.find(ft.text);  // LiberTEM uses the filetype's spelling as the table name
  const auto csr = table != toml.end() ? table : toml.find("raw_csr");
  if (csr == toml.end()) throw FormatError(where + " has no [raw_csr] table");
  const std::filesystem::path base = std::filesystem::path(path).parent_path();
  FileInfo fi;
  fi.path = path;
  fi.source_kind = "LiberTEM raw CSR";
  SparseSource& s = fi.sparse;
  s.kind = "libertem_csr";
  const auto file_and_dtype = [&](const char* fkey, const char* dkey, std::string& file, std::string& dtype) {
    const TomlValue fv = get(csr->second, "raw_csr", fkey), dv = get(csr->second, "raw_csr", dkey);
    if (!fv.is_string || fv.text.empty()) throw FormatError(where + " [raw_csr] " + fkey + " is not a file name");
    if (!dv.is_string) throw FormatError(where + " [raw_csr] " + dkey + " is not a dtype string");
    file = (base / fv.text).string();
    dtype = dv.text;
  };
  file_and_dtype("indptr_file", "indptr_dtype", s.indptr_file, s.indptr_dtype);
  file_and_dtype("indices_file", "indices_dtype", s.indices_file, s.indices_dtype);
  file_and_dtype("data_file", "data_dtype", s.values_file, s.values_dtype);
  const IndexType ip = index_type(s.indptr_dtype, where + " [raw_csr] indptr_dtype");
  const IndexType ix = index_type(s.indices_dtype, where + " [raw_csr] indices_dtype");
  bool big = false;
  DType vt;
  try {
    vt = raw::parse_dtype(s.values_dtype, big);
  } catch (const InvalidArgument& e) {
    throw FormatError(where + " [raw_csr] data_dtype: " + e.what());
  }
  const std::uint64_t ip_bytes = file_size(s.indptr_file, "CSR indptr file");
  if (ip_bytes % ip.size || ip_bytes / ip.size < 1)
    throw FormatError("the CSR indptr file '" + s.indptr_file + "' has " + std::to_string(ip_bytes) +
                      " bytes, not a whole number of " + s.indptr_dtype + " values");
  s.rows = ip_bytes / ip.size - 1;
  const std::uint64_t positions = checked_mul(nav.first, nav.second, where + " nav_shape");
  if (s.rows != positions)
    throw FormatError("the CSR indptr file '" + s.indptr_file + "' holds " + std::to_string(s.rows + 1) +
                      " offsets (" + std::to_string(s.rows) + " rows) but " + where + " nav_shape " +
                      std::to_string(nav.first) + " x " + std::to_string(nav.second) + " has " +
                      std::to_string(positions) + " positions");
  const std::uint64_t ix_bytes = file_size(s.indices_file, "CSR indices file");
  const std::uint64_t v_bytes = file_size(s.values_file, "CSR data file");
  if (ix_bytes % ix.size) throw FormatError("the CSR indices file '" + s.indices_file + "' is not whole " +
                                            s.indices_dtype + " values");
  s.nnz = ix_bytes / ix.size;
  if (v_bytes != s.nnz * dtype_size(vt))
    throw FormatError("the CSR data file '" + s.values_file + "' has " + std::to_string(v_bytes) + " bytes; " +
                      std::to_string(s.nnz) + " indices need " + std::to_string(s.nnz * dtype_size(vt)) + " (" +
                      s.values_dtype + ")");
  fi.dtype = vt == DType::f64 ? DType::f32 : vt;
  if (vt == DType::f64) fi.stored_as = DType::f64;
  fi.byte_order = big ? "big" : "little";
  fi.precision = 8 * dtype_size(vt);
  fi.dims = {std::size_t(positions), std::size_t(sig.first), std::size_t(sig.second)};
  ScanShapeHints hints;
  hints.given_rows = o.scan_rows;
  hints.given_cols = o.scan_cols;
  hints.sidecar = {(long long)nav.first, (long long)nav.second};
  hints.sidecar_source = "LiberTEM CSR nav_shape";
  resolve_scan_shape_or_describe(fi, positions, std::size_t(sig.first), std::size_t(sig.second), hints, o, where);
  fi.shape.nbytes(dtype_size(fi.dtype));
  fi.metadata = {{"nav_shape", {nav.first, nav.second}}, {"sig_shape", {sig.first, sig.second}},
                 {"indptr", json_safe(s.indptr_file) + " (" + s.indptr_dtype + ")"},
                 {"indices", json_safe(s.indices_file) + " (" + s.indices_dtype + ")"},
                 {"data", json_safe(s.values_file) + " (" + s.values_dtype + ")"},
                 {"nnz", s.nnz}};
  fi.codec.kind = FrameCodecKind::plain;
  fi.chunks_expected = fi.chunks_written = std::size_t(positions);
  fi.ready = true;
  return fi;
}

}  // namespace qgpu::io::sparse
