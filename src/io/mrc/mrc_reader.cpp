#include "io/mrc/mrc_reader.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <algorithm>

#include "core/checked.hpp"
#include "core/error.hpp"
#include "io/calibration.hpp"
#include "io/hdf5/scan_shape.hpp"

namespace qgpu::io::mrc {

namespace {

constexpr std::size_t kMapOffset = 208, kStampOffset = 212, kNextOffset = 92, kExttypOffset = 104;
constexpr std::uint64_t kMaxSidecarBytes = std::uint64_t(4) << 20;  // info.txt / csv read whole: a sanity limit

std::int32_t i32_at(const std::uint8_t* p, bool big) {
  const std::uint32_t v = big ? std::uint32_t(p[0]) << 24 | std::uint32_t(p[1]) << 16 | std::uint32_t(p[2]) << 8 | p[3]
                              : std::uint32_t(p[3]) << 24 | std::uint32_t(p[2]) << 16 | std::uint32_t(p[1]) << 8 | p[0];
  return static_cast<std::int32_t>(v);
}

std::string hex2(std::uint8_t a, std::uint8_t b) {
  char s[16];
  std::snprintf(s, sizeof s, "0x%02x 0x%02x", a, b);
  return s;
}

bool file_exists(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::string trim(const std::string& s) {
  std::size_t a = 0, b = s.size();
  while (a < b && (s[a] == ' ' || s[a] == '\t' || s[a] == '\r' || s[a] == '\n')) ++a;
  while (b > a && (s[b - 1] == ' ' || s[b - 1] == '\t' || s[b - 1] == '\r' || s[b - 1] == '\n')) --b;
  return s.substr(a, b - a);
}

std::string read_small_text(const std::string& path, const char* what) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode))
    throw IoError("cannot read the " + std::string(what) + " '" + path + "'");
  if (std::uint64_t(st.st_size) > kMaxSidecarBytes)
    throw FormatError("the " + std::string(what) + " '" + path + "' has " + std::to_string(st.st_size) +
                      " bytes, more than any such file (" + std::to_string(kMaxSidecarBytes) + ")");
  std::ifstream f(path, std::ios::binary);
  if (!f) throw IoError("cannot open the " + std::string(what) + " '" + path + "'");
  std::string s((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  return s;
}

// A whole decimal number (optional sign); nullopt otherwise.
std::optional<long long> whole(const std::string& s) {
  if (s.empty() || s.size() > 18) return std::nullopt;
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(s.c_str(), &end, 10);
  if (errno || end != s.c_str() + s.size()) return std::nullopt;
  return v;
}

std::optional<double> number(const std::string& s) {
  if (s.empty()) return std::nullopt;
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

std::string base_name(const std::string& p) {
  const auto slash = p.find_last_of('/');
  return slash == std::string::npos ? p : p.substr(slash + 1);
}

// Calibration stated by a DE info.txt: only positive values (DE writes -1 for "not known").
void de_calibration(const std::map<std::string, std::string>& info, const std::string& info_path, Calibration& cal) {
  const std::string shown = "DE info.txt " + base_name(info_path);
  const auto take = [&](const char* key) -> std::optional<double> {
    const auto it = info.find(key);
    if (it == info.end()) return std::nullopt;
    const std::optional<double> v = number(it->second);
    if (!v) {
      cal.warn(shown + " '" + key + "' is '" + it->second + "', not a number: ignored");
      return std::nullopt;
    }
    if (*v == -1) return std::nullopt;  // DE's "not set"
    if (*v <= 0) {
      cal.warn(shown + " '" + key + "' is " + it->second + ", not a positive value: ignored");
      return std::nullopt;
    }
    return v;
  };
  const auto src = [&](const char* key, double v) {
    char s[64];
    std::snprintf(s, sizeof s, "%.10g", v);
    return json_safe(shown + " '" + key + "' = " + s);
  };
  if (const auto v = take("Instrument Accelerating Voltage (V)"))
    cal.offer("energy_kev", *v / 1e3, "keV", src("Instrument Accelerating Voltage (V)", *v));
  const auto px = take("Specimen Pixel Size X (nanometers)");
  const auto py = take("Specimen Pixel Size Y (nanometers)");
  if (px) cal.offer("scan_step_angstrom", *px * 10, "angstrom", src("Specimen Pixel Size X (nanometers)", *px));
  if (px && py && std::fabs(*px - *py) > 0.01 * *px)
    cal.warn(shown + " Specimen Pixel Size Y differs from X by more than 1 %: X is used as the scan step");
  if (const auto v = take("Instrument Project Camera Length (centimeters)"))
    cal.offer("camera_length_m", *v / 100, "m", src("Instrument Project Camera Length (centimeters)", *v));
}

double f64_at(const std::uint8_t* p, bool big) {
  std::uint8_t b[8];
  std::memcpy(b, p, 8);
  if (big) std::reverse(b, b + 8);
  double v;
  std::memcpy(&v, b, 8);
  return v;
}

float f32_at(const std::uint8_t* p, bool big) {
  std::uint8_t b[4];
  std::memcpy(b, p, 4);
  if (big) std::reverse(b, b + 4);
  float v;
  std::memcpy(&v, b, 4);
  return v;
}

std::string num_text(double v) {
  char s[64];
  std::snprintf(s, sizeof s, "%.10g", v);
  return s;
}

// The Thermo Fisher / FEI extended header (EXTTYP FEI1 / FEI2: one metadata block per section, MRC-2014
// specification as mrcfile's FEI_EXTENDED_HEADER_DTYPE lays it out, packed: Metadata size i32 @0, Metadata version
// i32 @4, HT f8 @84 (V), Pixel size X / Y f8 @156 / @164 (m), Camera length f8 @301 (m)); or the legacy FEI header
// of 1024 records of 128 bytes (NEXT = 131072, rosettasciio's get_fei_dtype_list: pixel_size f4 @44, m). The block
// of the first section is read; a block size that cannot be is named in a warning (the frames still lie after NEXT).
nlohmann::json fei_extended_header(const std::uint8_t* e, std::size_t n, const MrcHeader& m, const std::string& where,
                                   Calibration& cal, std::vector<std::string>& warnings) {
  (void)where;
  const bool big = m.big_endian;
  nlohmann::json j = nlohmann::json::object();
  const std::string src = "MRC " + m.exttyp + " extended header (section 0) ";
  if (m.exttyp == "FEI1" || m.exttyp == "FEI2") {
    if (n < 8) {
      warnings.push_back("EXTTYP " + m.exttyp + " but the extended header (NEXT = " + std::to_string(m.next) +
                         " bytes) is shorter than its 8-byte block start: its metadata is not read");
      return j;
    }
    const std::int32_t size = i32_at(e, big), version = i32_at(e + 4, big);
    j["metadata_size"] = size;
    j["metadata_version"] = version;
    if (size <= 0 || size > m.next) {  // the frames still lie after NEXT bytes: read, with the header named
      warnings.push_back(m.exttyp + " extended header Metadata size (byte 1024) is " + std::to_string(size) +
                         "; it must be positive and at most NEXT = " + std::to_string(m.next) +
                         ": its metadata is not read");
      j["malformed"] = true;
      return j;
    }
    if (m.next % size)
      warnings.push_back(m.exttyp + " extended header: NEXT = " + std::to_string(m.next) +
                         " is not a whole number of " + std::to_string(size) + "-byte metadata blocks");
    else
      j["blocks"] = m.next / size;
    const std::size_t have = std::min<std::size_t>(std::size_t(size), n);
    const auto field = [&](const char* name, std::size_t off) -> std::optional<double> {
      if (off + 8 > have) return std::nullopt;
      const double v = f64_at(e + off, big);
      j[name] = std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr);
      return std::isfinite(v) ? std::optional<double>(v) : std::nullopt;
    };
    const auto ht = field("HT_V", 84);
    const auto px = field("pixel_size_x_m", 156);
    field("pixel_size_y_m", 164);
    const auto cl = field("camera_length_m", 301);
    if (ht && *ht > 0) cal.offer("energy_kev", *ht / 1e3, "keV", src + "HT (" + num_text(*ht) + " V)");
    if (cl && *cl > 0) cal.offer("camera_length_m", *cl, "m", src + "Camera length (" + num_text(*cl) + " m)");
    if (px && *px > 0)
      cal.offer("fei_pixel_size_m", *px, "m", src + "Pixel size X (" + num_text(*px) + " m; the frame's pixel as FEI "
                                                "states it: specimen-referred for images)");
    else if (px)
      cal.warn(src + "Pixel size X is " + num_text(*px) + ": not a positive size, not used");
  } else if (m.next == 131072 && n >= 128) {
    const float px = f32_at(e + 44, big);
    j["legacy_records"] = 1024;
    j["pixel_size_m"] = std::isfinite(px) ? nlohmann::json(px) : nlohmann::json(nullptr);
    if (std::isfinite(px) && px > 0)
      cal.offer("fei_pixel_size_m", px, "m", "MRC legacy FEI extended header (record 0) pixel_size (" + num_text(px) + " m)");
  }
  return j;
}

}  // namespace

std::string mode_name(std::int32_t mode) {
  switch (mode) {
    case 0: return "int8";
    case 1: return "int16";
    case 2: return "float32";
    case 3: return "complex int16";
    case 4: return "complex float32";
    case 6: return "uint16";
    case 12: return "float16";
    case 101: return "4-bit";
    default: return "unknown";
  }
}

bool is_mrc_head(const std::uint8_t* head, std::size_t n) {
  return n >= kMapOffset + 4 && std::memcmp(head + kMapOffset, "MAP ", 4) == 0;
}

MrcHeader parse_header(const std::uint8_t* h, std::size_t n, std::uint64_t file_bytes, const std::string& where) {
  if (n < kHeaderBytes || file_bytes < kHeaderBytes)
    throw FormatError(where + ": an MRC header has 1024 bytes, the file has " + std::to_string(file_bytes) +
                      " (truncated file)");
  MrcHeader m;
  m.has_map = std::memcmp(h + kMapOffset, "MAP ", 4) == 0;
  const std::uint8_t s0 = h[kStampOffset], s1 = h[kStampOffset + 1];
  m.machine_stamp = hex2(s0, s1);
  if (s0 == 0x44 && (s1 == 0x44 || s1 == 0x41)) {
    m.big_endian = false;
  } else if (s0 == 0x11 && s1 == 0x11) {
    m.big_endian = true;
  } else if (s0 == 0 && s1 == 0) {
    m.big_endian = false;  // no stamp (older writers): little-endian assumed, said in the metadata
  } else {
    throw FormatError(where + ": MRC machine stamp (byte 212) is " + m.machine_stamp +
                      ", neither little-endian (0x44 0x44) nor big-endian (0x11 0x11)");
  }
  const bool big = m.big_endian;
  m.nx = i32_at(h + 0, big);
  m.ny = i32_at(h + 4, big);
  m.nz = i32_at(h + 8, big);
  m.mode = i32_at(h + 12, big);
  m.next = i32_at(h + kNextOffset, big);
  bool printable = true;
  for (std::size_t i = 0; i < 4; ++i)
    printable = printable && h[kExttypOffset + i] >= 0x20 && h[kExttypOffset + i] < 0x7f;
  if (printable) m.exttyp = trim(std::string(reinterpret_cast<const char*>(h + kExttypOffset), 4));
  for (const auto& [name, v] : {std::pair<const char*, std::int32_t>{"NX (columns, byte 0)", m.nx},
                                {"NY (rows, byte 4)", m.ny}, {"NZ (frames, byte 8)", m.nz}})
    if (v <= 0)
      throw FormatError(where + ": MRC header field " + name + " is " + std::to_string(v) +
                        "; it must be positive");
  switch (m.mode) {
    case 0: m.dtype = DType::i8; break;
    case 1: m.dtype = DType::i16; break;
    case 2: m.dtype = DType::f32; break;
    case 6: m.dtype = DType::u16; break;
    default:
      throw DTypeError(where + ": MRC MODE (byte 12) is " + std::to_string(m.mode) + " (" + mode_name(m.mode) +
                       "); read are modes 0 (int8), 1 (int16), 2 (float32) and 6 (uint16)");
  }
  if (m.next < 0)
    throw FormatError(where + ": MRC header field NEXT (extended header bytes, byte 92) is " + std::to_string(m.next) +
                      "; it must not be negative");
  m.data_offset = kHeaderBytes + std::uint64_t(m.next);
  if (m.data_offset > file_bytes)
    throw FormatError(where + ": MRC header field NEXT (byte 92) = " + std::to_string(m.next) +
                      " puts the data at byte " + std::to_string(m.data_offset) + ", past the end of the file (" +
                      std::to_string(file_bytes) + " bytes)");
  m.frame_bytes = checked_product({std::uint64_t(m.nx), std::uint64_t(m.ny), dtype_size(m.dtype)}, where + " MRC frame");
  m.data_bytes = checked_mul(m.frame_bytes, std::uint64_t(m.nz), where + " MRC data size");
  if (checked_add(m.data_offset, m.data_bytes, where + " MRC size") > file_bytes)
    throw FormatError(where + ": the MRC header (NX " + std::to_string(m.nx) + ", NY " + std::to_string(m.ny) +
                      ", NZ " + std::to_string(m.nz) + ", MODE " + std::to_string(m.mode) + " " + mode_name(m.mode) +
                      ") announces " + std::to_string(m.data_bytes) + " bytes of data after " +
                      std::to_string(m.data_offset) + " header bytes; the file has " + std::to_string(file_bytes) +
                      " (truncated file, or header fields that disagree with it)");
  return m;
}

std::map<std::string, std::string> read_de_info(const std::string& path) {
  const std::string text = read_small_text(path, "Direct Electron info file");
  std::map<std::string, std::string> out;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(start, end - start);
    start = end + 1;
    const auto eq = line.find('=');
    if (eq == std::string::npos) continue;
    const std::string key = trim(line.substr(0, eq));
    if (!key.empty() && !out.count(key)) out[key] = trim(line.substr(eq + 1));
  }
  return out;
}

std::vector<std::pair<long long, long long>> read_scan_coordinates(const std::string& path) {
  const std::string text = read_small_text(path, "scan coordinates csv");
  std::vector<std::pair<long long, long long>> out;
  std::size_t start = 0, line_no = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    const std::string line = trim(text.substr(start, end - start));
    start = end + 1;
    ++line_no;
    if (line.empty()) continue;
    const auto comma = line.find(',');
    const auto x = comma == std::string::npos ? std::nullopt : whole(trim(line.substr(0, comma)));
    const auto y = comma == std::string::npos ? std::nullopt : whole(trim(line.substr(comma + 1)));
    if (!x || !y)
      throw FormatError("scan coordinates csv '" + path + "' line " + std::to_string(line_no) + " is '" + line +
                        "', not 'x,y' (two whole numbers)");
    out.emplace_back(*x, *y);
  }
  return out;
}

FileInfo inspect_mrc(const std::string& path, const SourceOptions& o) {
  const std::string where = "'" + path + "'";
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) throw IoError("cannot open " + where + ": " + std::strerror(errno));
  std::vector<std::uint8_t> head(kHeaderBytes);
  struct stat st {};
  const ssize_t got = ::fstat(fd, &st) == 0 ? ::pread(fd, head.data(), head.size(), 0) : -1;
  const int err = errno;
  ::close(fd);
  if (got < 0) throw IoError("cannot read " + where + ": " + std::strerror(err));
  const std::uint64_t file_bytes = std::uint64_t(st.st_size);
  const MrcHeader m = parse_header(head.data(), std::size_t(got), file_bytes, where);
  std::vector<std::uint8_t> ext;
  if (m.next > 0) {  // the first block of the extended header (FEI metadata); the data start after all NEXT bytes
    ext.resize(std::min<std::size_t>(std::size_t(m.next), 4096));
    const int efd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    const ssize_t eg = efd >= 0 ? ::pread(efd, ext.data(), ext.size(), kHeaderBytes) : -1;
    if (efd >= 0) ::close(efd);
    if (eg < 0) throw IoError("cannot read the extended header of " + where);
    ext.resize(std::size_t(eg));
  }

  FileInfo fi;
  fi.path = path;
  fi.dataset_path = "";
  fi.source_kind = "MRC";
  if (m.next > 0)
    fi.source_kind += ", extended header " + (m.exttyp.empty() ? std::string("(no EXTTYP)") : m.exttyp) + " of " +
                      std::to_string(m.next) + " bytes";
  fi.dtype = m.dtype;
  const std::uint64_t frames = std::uint64_t(m.nz);
  const std::size_t det_r = std::size_t(m.ny), det_c = std::size_t(m.nx);
  fi.dims = {std::size_t(m.nz), det_r, det_c};
  fi.metadata = {{"NX", m.nx},         {"NY", m.ny},
                 {"NZ", m.nz},         {"MODE", m.mode},
                 {"mode_name", mode_name(m.mode)},
                 {"NEXT", m.next},     {"EXTTYP", m.exttyp},
                 {"MAP", m.has_map},   {"machine_stamp", m.machine_stamp + (m.machine_stamp == "0x00 0x00"
                                                                                ? " (none: little-endian assumed)"
                                                                                : "")},
                 {"data_offset", m.data_offset}};
  Calibration fei_cal;
  if (!ext.empty()) {
    const nlohmann::json fei = fei_extended_header(ext.data(), ext.size(), m, where, fei_cal, fi.warnings);
    if (!fei.empty()) fi.metadata["extended_header"] = fei;
  }
  const std::uint64_t end = m.data_offset + m.data_bytes;  // checked in parse_header
  if (end < file_bytes)
    fi.warnings.push_back(std::to_string(file_bytes - end) + " bytes after the last of the NZ = " +
                          std::to_string(m.nz) + " frames are not read");

  ScanShapeHints hints;
  hints.given_rows = o.scan_rows;
  hints.given_cols = o.scan_cols;
  const bool given = o.scan_rows || o.scan_cols;
  std::string refusal;  // the DE files state a scan we do not read yet (not given: a load is refused with this)
  std::vector<std::uint64_t> custom_positions;  // a DE custom scan: the flat scan position of every frame
  std::uint32_t custom_most_visits = 0;
  std::pair<std::size_t, std::size_t> custom_shape{0, 0};
  std::string custom_source;

  // Direct Electron: <id>_movie.mrc with <id>_info.txt (and for XY-file scans <id>_scan_coordinates.csv) beside it.
  const std::string suffix = "_movie.mrc";
  if (path.size() > suffix.size() && path.compare(path.size() - suffix.size(), suffix.size(), suffix) == 0) {
    const std::string id = path.substr(0, path.size() - suffix.size());
    const std::string info_path = id + "_info.txt", csv_path = id + "_scan_coordinates.csv";
    if (file_exists(info_path)) {
      const auto info = read_de_info(info_path);
      fi.metadata["de_info"] = json_safe(info_path);
      Calibration cal;
      de_calibration(info, info_path, cal);
      fi.calibration = cal.flat();
      fi.calibration_detail = cal.detail();
      fi.metadata_warnings = cal.warnings;
      const auto get = [&](const char* key) {
        const auto it = info.find(key);
        return it == info.end() ? std::string() : it->second;
      };
      const std::string shown = "DE info.txt " + base_name(info_path);
      const auto sx = whole(get("Scan - Size X")), sy = whole(get("Scan - Size Y"));
      const auto repeats = whole(get("Scan - Repeats"));
      const std::string type = get("Scan - Type");
      fi.metadata["de_scan_type"] = json_safe(type);
      if (get("Scan - Enable") == "Enable" && sx && sy && *sx > 0 && *sy > 0 && *sx <= UINT32_MAX &&
          *sy <= UINT32_MAX) {
        const bool has_csv = file_exists(csv_path);
        if (has_csv) fi.metadata["scan_coordinates"] = json_safe(csv_path);
        if (repeats && *repeats > 1) {
          refusal = shown + " states Scan - Repeats = " + std::to_string(*repeats) +
                    ": repeated scans are not supported yet; give scan_shape (--scan-shape ROWS COLS) to read the "
                    "frames as one scan";
        } else if (has_csv) {
          const auto pos = read_scan_coordinates(csv_path);
          const std::uint64_t n = checked_mul(std::uint64_t(*sx), std::uint64_t(*sy), shown + " scan size");
          bool raster = pos.size() == n;
          for (std::uint64_t i = 0; raster && i < n; ++i)
            raster = pos[i].first == (long long)(i % std::uint64_t(*sx)) &&
                     pos[i].second == (long long)(i / std::uint64_t(*sx));
          if (!raster && !given) {
            // A random, ROI or custom scan: frame i lies at the csv's line i ("x,y": column, row), as rosettasciio
            // reads it; positions never listed stay empty (named at load), positions listed twice are summed.
            if (pos.size() != frames)
              throw FormatError(where + ": scan coordinates csv '" + csv_path + "' lists " +
                                std::to_string(pos.size()) + " positions for the " + std::to_string(frames) +
                                " frames (NZ) of the movie");
            // Visits counted over the listed positions (sorted), never over the stated scan: Scan - Size X x Y
            // comes from a text file and may be any size, the csv lists one line per frame of the file.
            custom_positions.resize(pos.size());
            for (std::size_t i = 0; i < pos.size(); ++i) {
              const auto [x, y] = pos[i];
              if (x < 0 || y < 0 || x >= *sx || y >= *sy)
                throw FormatError("scan coordinates csv '" + csv_path + "' line " + std::to_string(i + 1) + " (" +
                                  std::to_string(x) + "," + std::to_string(y) + ") is outside " + shown +
                                  " Scan - Size X x Scan - Size Y = " + std::to_string(*sx) + " x " +
                                  std::to_string(*sy));
              custom_positions[i] = std::uint64_t(y) * std::uint64_t(*sx) + std::uint64_t(x);
            }
            std::vector<std::uint64_t> sorted = custom_positions;
            std::sort(sorted.begin(), sorted.end());
            std::uint64_t distinct = 0, twice = 0;
            std::uint32_t most = 0;
            for (std::size_t i = 0; i < sorted.size();) {
              std::size_t j = i;
              while (j < sorted.size() && sorted[j] == sorted[i]) ++j;
              ++distinct;
              twice += j - i > 1;
              most = std::max(most, std::uint32_t(std::min<std::size_t>(j - i, UINT32_MAX)));
              i = j;
            }
            const std::uint64_t never = n - distinct;
            custom_most_visits = most;
            fi.metadata["de_custom_scan"] = {{"positions_listed", pos.size()},
                                             {"positions_never_scanned", never},
                                             {"positions_visited_more_than_once", twice},
                                             {"most_visits", most}};
            if (twice)
              fi.warnings.push_back(std::to_string(twice) + " scan positions of '" + csv_path +
                                    "' are listed more than once (up to " + std::to_string(most) +
                                    " times): their frames are summed");
            if (never)
              fi.warnings.push_back(std::to_string(never) + " of the " + std::to_string(n) + " scan positions are "
                                    "never listed in '" + csv_path + "': their frames are empty (the load's metadata "
                                    "names them in missing_positions)");
          } else if (!raster) {
            refusal = "scan coordinates csv '" + csv_path + "' (" + std::to_string(pos.size()) +
                      " positions) is not the plain raster of " + shown + " Scan - Size Y x Scan - Size X = " +
                      std::to_string(*sy) + " x " + std::to_string(*sx) +
                      " (row-major, every position once): with the scan shape given the frames are read in file "
                      "order; without it they are placed at the csv's positions";
          }
        } else if (!type.empty() && type != "Raster") {
          refusal = shown + " states Scan - Type = " + type + " but its scan coordinates csv '" + csv_path +
                    "' is missing: the scan order is unknown";
        }
        if (!custom_positions.empty()) {
          custom_shape = {std::size_t(*sy), std::size_t(*sx)};
          custom_source = json_safe(shown + " Scan - Size Y x Scan - Size X, frames at the positions of " +
                                    base_name(csv_path));
        } else if (refusal.empty()) {
          hints.sidecar = {*sy, *sx};
          hints.sidecar_source = json_safe(shown + " Scan - Size Y x Scan - Size X");
        } else if (given) {
          fi.warnings.push_back("the scan shape is given; " + refusal);
        }
      } else {
        fi.metadata_warnings.push_back(shown + " states no scan (Scan - Enable, Scan - Size X / Y): no scan shape "
                                       "from it");
      }
    }
  }
  if (!fei_cal.values.empty() || !fei_cal.warnings.empty()) {
    Calibration cal;
    for (const auto& [k, v] : fi.calibration_detail.items())
      if (v.is_object() && v.contains("value") && v["value"].is_number())
        cal.offer(k, v["value"].get<double>(), v.value("unit", ""), v.value("source", ""));
    for (const auto& [k, v] : fei_cal.values) cal.offer(k, v.value, v.unit, v.source);
    for (const std::string& w : fei_cal.warnings) cal.warn(w);
    fi.calibration = cal.flat();
    fi.calibration_detail = cal.detail();
    for (const std::string& w : cal.warnings) fi.metadata_warnings.push_back(w);
  }
  if (!custom_positions.empty()) {
    fi.shape = {custom_shape.first, custom_shape.second, det_r, det_c};
    fi.frames = std::uint64_t(custom_shape.first) * custom_shape.second;
    fi.scan_shape_source = custom_source;
  } else if (!refusal.empty() && !given) {
    fi.frames = frames;
    if (o.need == ScanShapeNeed::required) throw FormatError(where + ": " + refusal);
    fi.shape = {0, 0, det_r, det_c};
    fi.scan_shape_known = false;
    fi.scan_shape_needed = where + ": " + refusal;
    fi.scan_shape_source = "undetermined";
  } else {
    resolve_scan_shape_or_describe(fi, frames, det_r, det_c, hints, o, where);
  }
  fi.shape.nbytes(dtype_size(fi.dtype));
  fi.codec.kind = FrameCodecKind::plain;
  fi.byte_order = m.big_endian && dtype_size(m.dtype) > 1 ? "big" : "little";
  fi.precision = 8 * dtype_size(m.dtype);
  fi.records.files = {path};
  fi.records.runs = {{0, 0, frames, m.data_offset, m.frame_bytes, m.frame_bytes}};
  if (!custom_positions.empty()) {
    fi.sparse.kind = "frame_positions";
    fi.sparse.positions = std::move(custom_positions);
    fi.sparse.stored_frames = frames;
    fi.sparse.values_dtype = std::string(fi.byte_order == "big" ? ">" : "<") +
                             (m.dtype == DType::i8 ? "i1" : m.dtype == DType::i16 ? "i2" : m.dtype == DType::f32 ? "f4" : "u2");
    if (custom_most_visits > 1 && m.dtype != DType::f32) {  // summed visits: counts in a wider type
      fi.stored_as = m.dtype;
      fi.dtype = is_signed_dtype(m.dtype) ? DType::i32 : DType::u32;
    }
  }
  fi.one_frame_per_chunk = true;
  fi.chunks_expected = fi.chunks_written = std::size_t(frames);
  fi.ready = true;
  return fi;
}

}  // namespace qgpu::io::mrc
