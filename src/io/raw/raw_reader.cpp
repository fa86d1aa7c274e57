#include "io/raw/raw_reader.hpp"

#include <filesystem>

#include "core/checked.hpp"
#include "core/error.hpp"
#include "io/hdf5/scan_shape.hpp"

namespace qgpu::io::raw {

DType parse_dtype(const std::string& s, bool& big) {
  big = false;
  std::string t = s;
  auto ends = [&](const char* suffix) {
    const std::string x(suffix);
    if (t.size() > x.size() && t.compare(t.size() - x.size(), x.size(), x) == 0) {
      t.resize(t.size() - x.size());
      return true;
    }
    return false;
  };
  if (ends("be")) big = true;
  else ends("le");
  if (!t.empty() && (t[0] == '<' || t[0] == '>' || t[0] == '|' || t[0] == '=')) {
    big = t[0] == '>';
    t = t.substr(1);
  }
  if (t == "uint8" || t == "u1") return big = false, DType::u8;
  if (t == "uint16" || t == "u2") return DType::u16;
  if (t == "uint32" || t == "u4") return DType::u32;
  if (t == "int8" || t == "i1") return big = false, DType::i8;
  if (t == "int16" || t == "i2") return DType::i16;
  if (t == "int32" || t == "i4") return DType::i32;
  if (t == "float32" || t == "f4") return DType::f32;
  if (t == "float64" || t == "f8") return DType::f64;
  throw InvalidArgument("raw dtype '" + s + "' is not one of uint8, uint16, uint32, int8, int16, int32, float32, "
                        "float64 (optionally with a byte order: uint16be, >u2, <f4, ...)");
}

FileInfo inspect_raw(const std::string& path, const SourceOptions& o) {
  const std::string where = "'" + path + "' (raw)";
  const RawLayout& r = o.raw;
  if (r.dtype.empty() || !r.det_rows || !r.det_cols)
    throw InvalidArgument("format 'raw' needs the dtype and the detector shape (rows, cols) of its frames");
  FileInfo fi;
  fi.path = path;
  fi.source_kind = "raw frames";
  bool big = false;
  const DType stored = parse_dtype(r.dtype, big);
  fi.dtype = stored == DType::f64 ? DType::f32 : stored;  // float64 is read as float32 (FileInfo::stored_as)
  if (stored != fi.dtype) fi.stored_as = stored;
  std::error_code ec;
  const std::uint64_t size = std::filesystem::file_size(path, ec);
  if (ec) throw IoError("cannot stat '" + path + "': " + ec.message());
  const std::uint64_t frame_bytes =
      checked_mul<InvalidArgument>(checked_mul<InvalidArgument>(std::uint64_t(r.det_rows), std::uint64_t(r.det_cols),
                                                                "raw detector shape"),
                                   std::uint64_t(dtype_size(stored)), "raw frame size");
  const std::uint64_t stride = checked_add<InvalidArgument>(
      checked_add<InvalidArgument>(frame_bytes, r.frame_header, "raw frame stride"), r.frame_footer,
      "raw frame stride");
  if (r.offset > size)
    throw FormatError(where + ": the offset " + std::to_string(r.offset) + " lies past the end of the file (" +
                      std::to_string(size) + " bytes)");
  // The last frame needs its header and pixels, not its footer.
  const std::uint64_t avail = size - r.offset;
  const std::uint64_t frames =
      avail < r.frame_header + frame_bytes ? 0 : (avail - r.frame_header - frame_bytes) / stride + 1;
  if (frames == 0)
    throw FormatError(where + " holds no whole frame of " + std::to_string(frame_bytes) + " bytes after offset " +
                      std::to_string(r.offset) + " (the file has " + std::to_string(size) + " bytes)");
  ScanShapeHints hints;
  hints.given_rows = o.scan_rows;
  hints.given_cols = o.scan_cols;
  std::uint64_t used = frames;
  if (o.scan_rows && o.scan_cols) {
    used = checked_mul<RegionError>(o.scan_rows, o.scan_cols, "given scan shape");
    if (used > frames)
      throw FormatError("given scan shape " + std::to_string(o.scan_rows) + "x" + std::to_string(o.scan_cols) +
                        " needs " + std::to_string(used) + " frames; " + where + " holds " + std::to_string(frames) +
                        " whole frames of " + std::to_string(frame_bytes) + " bytes");
    if (used < frames)
      fi.warnings.push_back(where + " holds " + std::to_string(frames) + " frames; the given scan shape takes the "
                            "first " + std::to_string(used));
  } else if (const std::uint64_t rest = avail - (frames - 1) * stride - r.frame_header - frame_bytes; rest) {
    fi.warnings.push_back(where + ": " + std::to_string(rest) + " bytes after the last whole frame are not read");
  }
  resolve_scan_shape_or_describe(fi, used, r.det_rows, r.det_cols, hints, o, where);
  fi.shape.nbytes(dtype_size(fi.dtype));
  fi.dims = {std::size_t(used), r.det_rows, r.det_cols};
  fi.codec.kind = FrameCodecKind::plain;
  fi.byte_order = big && dtype_size(stored) > 1 ? "big" : "little";
  fi.precision = 8 * dtype_size(stored);
  fi.records.files = {path};
  fi.records.runs = {{0, 0, used, r.offset + r.frame_header, stride, frame_bytes}};
  fi.one_frame_per_chunk = true;
  fi.chunks_expected = fi.chunks_written = std::size_t(used);
  fi.ready = true;
  fi.metadata = {{"raw_dtype", r.dtype},
                 {"offset", r.offset},
                 {"frame_header", r.frame_header},
                 {"frame_footer", r.frame_footer},
                 {"frames_in_file", frames}};
  return fi;
}

}  // namespace qgpu::io::raw
