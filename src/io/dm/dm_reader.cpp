#include "io/dm/dm_reader.hpp"

#include <cmath>

#include "core/checked.hpp"
#include "core/electron.hpp"
#include "core/error.hpp"
#include "io/calibration.hpp"
#include "io/hdf5/scan_shape.hpp"

namespace qgpu::io::dm {

namespace {

struct ImageType {
  DType stored;
  std::uint64_t bytes;
};

// ImageData.DataType -> element type; nullopt for complex, RGB, packed and other non-count types.
std::optional<ImageType> image_type(long long code) {
  switch (code) {
    case 1: return ImageType{DType::i16, 2};
    case 2: return ImageType{DType::f32, 4};
    case 6: return ImageType{DType::u8, 1};
    case 7: return ImageType{DType::i32, 4};
    case 9: return ImageType{DType::i8, 1};
    case 10: return ImageType{DType::u16, 2};
    case 11: return ImageType{DType::u32, 4};
    case 12: return ImageType{DType::f64, 8};
    default: return std::nullopt;
  }
}

std::string data_type_name(long long code) {
  switch (code) {
    case 3: return "complex64";
    case 4: return "packed complex";
    case 8: return "RGB";
    case 13: return "complex128";
    case 14: return "binary (bool)";
    case 23: return "RGBA";
    default: return "DataType " + std::to_string(code);
  }
}

// A length in angstrom from a DM scale and unit; nullopt for units that are not lengths.
std::optional<double> angstrom(double scale, const std::string& unit) {
  if (unit == "nm") return scale * 10;
  if (unit == "A" || unit == "Angstrom" || unit == "angstrom") return scale;
  if (unit == "pm") return scale * 0.01;
  if (unit == "um" || unit == "micron") return scale * 1e4;
  return std::nullopt;
}

struct Candidate {
  std::string prefix;  // ImageList/<i>/ImageData/
  std::vector<std::uint64_t> dims;
  std::uint64_t elements = 0;
};

}  // namespace

FileInfo describe_dm(const TagTree& t, const std::string& path, const SourceOptions& o) {
  const std::string where = "DM" + std::to_string(t.version) + " file '" + path + "'";
  const Tag* list = t.find("ImageList");
  if (!list || list->kind != TagKind::group) throw FormatError(where + " has no ImageList tag group");
  // Every image: its Dimensions; the data are the largest 3D / 4D one (ImageList/0 is usually the thumbnail).
  std::vector<Candidate> images;
  std::string seen;
  for (std::uint64_t i = 0; i < list->children; ++i) {
    const std::string p = "ImageList/" + std::to_string(i) + "/ImageData/";
    const Tag* dims = t.find(p + "Dimensions");
    if (!dims || dims->kind != TagKind::group) continue;
    Candidate c{p, {}, 1};
    for (std::uint64_t k = 0; k < dims->children; ++k) {
      const auto d = t.number(p + "Dimensions/" + std::to_string(k));
      if (!d || *d < 1 || *d != std::floor(*d) || *d > 4294967295.0)
        throw FormatError(where + ": ImageList " + std::to_string(i) + " ImageData.Dimensions[" + std::to_string(k) +
                          "] is not a whole number >= 1");
      c.dims.push_back(std::uint64_t(*d));
      c.elements = checked_mul(c.elements, std::uint64_t(*d), where + " image size");
    }
    std::string shape;
    for (std::uint64_t d : c.dims) shape += (shape.empty() ? "" : " x ") + std::to_string(d);
    seen += (seen.empty() ? "" : ", ") + ("image " + std::to_string(i) + ": " + (shape.empty() ? "no dims" : shape));
    if (c.dims.size() == 3 || c.dims.size() == 4) images.push_back(std::move(c));
  }
  if (images.empty())
    throw FormatError(where + " holds no 3D or 4D image (" + (seen.empty() ? "no images" : seen) +
                      " in ImageData.Dimensions, fastest first): nothing to read as 4D-STEM data");
  const Candidate* best = &images[0];
  for (const Candidate& c : images)
    if (c.elements > best->elements) best = &c;
  const std::string p = best->prefix;
  const std::string img = p.substr(0, p.size() - std::string("ImageData/").size());  // ImageList/<i>/
  const std::string image_where = where + " " + img.substr(0, img.size() - 1);

  const Tag* data = t.find(p + "Data");
  if (!data || data->kind != TagKind::array)
    throw FormatError(image_where + ": ImageData.Data is missing or not an array");
  const auto code = t.number(p + "DataType");
  if (!code) throw FormatError(image_where + ": ImageData.DataType is missing");
  const auto type = image_type((long long)*code);
  if (!type)
    throw DTypeError(image_where + " holds " + data_type_name((long long)*code) +
                     " values; readable are int8/16/32, uint8/16/32, float32 and float64 (DataType 9, 1, 7, 6, 10, "
                     "11, 2, 12)");
  if (data->elem_type == 15 || data->elem_bytes != type->bytes)
    throw FormatError(image_where + ": ImageData.Data holds elements of " + std::to_string(data->elem_bytes) +
                      " bytes but DataType " + std::to_string((long long)*code) + " (" + dtype_name(type->stored) +
                      ") has " + std::to_string(type->bytes));
  if (data->count != best->elements)
    throw FormatError(image_where + ": ImageData.Data holds " + std::to_string(data->count) +
                      " elements but its Dimensions give " + std::to_string(best->elements));

  const auto swapped = t.number(img + "ImageTags/Meta Data/Data Order Swapped");
  const std::string format = t.text(img + "ImageTags/Meta Data/Format");
  const std::vector<std::uint64_t>& d = best->dims;
  const bool old_layout = d.size() == 4 && !(swapped && *swapped != 0);
  // The old layout (GMS before the STEMx frame-contiguous save): Dimensions (scan_x, scan_y, det_x, det_y), the scan
  // column fastest, so each frame is scattered over the file: read by the transposed loaders (dense).
  if (old_layout && type->stored == DType::f64)
    throw DTypeError(image_where +
                     " holds float64 in the old transposed layout (no Data Order Swapped), read as "
                     "float32 only frame by frame: re-save it from DigitalMicrograph in the frame-contiguous order "
                     "(or as float32)");
  if (d.size() == 3 && format == "Spectrum image")
    throw FormatError(image_where +
                      " is a spectrum image (ImageTags.Meta Data.Format), not a stack of diffraction "
                      "frames");

  FileInfo fi;
  fi.path = path;
  fi.source_kind = "DM" + std::to_string(t.version) + " " + img.substr(0, img.size() - 1);
  fi.dtype = type->stored == DType::f64 ? DType::f32 : type->stored;  // float64 is read as float32
  if (type->stored != fi.dtype) fi.stored_as = type->stored;
  // Where the detector (x, y) and scan (x, y) pairs sit in Dimensions: (det, scan), or (scan, det) in the old layout.
  const std::size_t dx = old_layout ? 2 : 0, sx = old_layout ? 0 : 2;
  const std::size_t det_c = std::size_t(d[dx]), det_r = std::size_t(d[dx + 1]);
  const std::uint64_t frames = d.size() == 4 ? d[sx] * d[sx + 1] : d[2];
  fi.dims = d.size() == 4 ? std::vector<std::size_t>{std::size_t(d[sx + 1]), std::size_t(d[sx]), det_r, det_c}
                          : std::vector<std::size_t>{std::size_t(d[2]), det_r, det_c};

  // Calibration: Calibrations.Dimension[k] in the order of Dimensions.
  Calibration cal;
  nlohmann::json dims_json = nlohmann::json::array();
  std::vector<double> scale(d.size(), 0);
  std::vector<std::string> unit(d.size());
  for (std::size_t k = 0; k < d.size(); ++k) {
    const std::string c = p + "Calibrations/Dimension/" + std::to_string(k) + "/";
    const auto s = t.number(c + "Scale"), orig = t.number(c + "Origin");
    scale[k] = s ? *s : 0;
    unit[k] = t.text(c + "Units");
    dims_json.push_back({{"size", d[k]},
                         {"scale", s ? nlohmann::json(*s) : nlohmann::json()},
                         {"origin", orig ? nlohmann::json(*orig) : nlohmann::json()},
                         {"units", json_safe(unit[k])}});
  }
  const std::string cal_src = "DM " + img + "ImageData/Calibrations/Dimension";
  const auto voltage = t.number(img + "ImageTags/Microscope Info/Voltage");
  if (voltage && std::isfinite(*voltage) && *voltage > 0)
    cal.offer("energy_kev", *voltage / 1e3, "keV", "DM " + img + "ImageTags/Microscope Info/Voltage (V)");
  else if (voltage)
    cal.warn("DM Microscope Info Voltage " + std::to_string(*voltage) + " is not a positive number: ignored");
  if (d.size() == 4 && scale[sx] > 0 && std::isfinite(scale[sx])) {
    if (const auto a = angstrom(scale[sx], unit[sx])) {
      cal.offer(
          "scan_step_angstrom", *a, "angstrom",
          cal_src + "[" + std::to_string(sx) + "] (" + std::to_string(scale[sx]) + " " + json_safe(unit[sx]) + ")");
      const auto b = angstrom(scale[sx + 1], unit[sx + 1]);
      if (!b || std::abs(*b - *a) > 0.01 * *a) cal.warn(cal_src + " scan y differs from scan x: the x step is used");
    } else {
      cal.warn(cal_src + "[" + std::to_string(sx) + "] unit '" + json_safe(unit[sx]) +
               "' is not a length: no scan step");
    }
  }
  if (scale[dx] > 0 && std::isfinite(scale[dx])) {
    const std::string src =
        cal_src + "[" + std::to_string(dx) + "] (" + std::to_string(scale[dx]) + " " + json_safe(unit[dx]) + ")";
    const CalibrationValue* e = cal.find("energy_kev");
    if (unit[dx] == "mrad") {
      cal.offer("detector_mrad_per_pixel", scale[dx], "mrad/px", src);
    } else if ((unit[dx] == "1/nm" || unit[dx] == "1/A") && e) {
      const double lambda_a = electron_wavelength_angstrom(e->value);
      const double per_a = unit[dx] == "1/nm" ? scale[dx] / 10 : scale[dx];
      cal.offer("detector_mrad_per_pixel", per_a * lambda_a * 1e3, "mrad/px",
                src + " x the electron wavelength at " + std::to_string(e->value) + " keV");
    } else if (!unit[dx].empty()) {
      cal.warn(src + ": no detector mrad/px from it (mrad, or 1/nm and 1/A with the Microscope Info Voltage)");
    }
  }
  fi.calibration = cal.flat();
  fi.calibration_detail = cal.detail();
  fi.metadata_warnings = cal.warnings;
  fi.metadata = {{"dm_version", t.version},
                 {"image", img.substr(0, img.size() - 1)},
                 {"data_type", (long long)*code},
                 {"dimensions_fastest_first", d},
                 {"calibrations", dims_json},
                 {"data_order_swapped", swapped ? nlohmann::json(*swapped != 0) : nlohmann::json()},
                 {"format", json_safe(format)},
                 {"data_offset", data->offset},
                 {"images", json_safe(seen)}};

  ScanShapeHints hints;
  hints.given_rows = o.scan_rows;
  hints.given_cols = o.scan_cols;
  if (d.size() == 4) hints.dataset_dims = {std::size_t(d[sx + 1]), std::size_t(d[sx])};
  resolve_scan_shape_or_describe(fi, frames, det_r, det_c, hints, o, where);
  const std::uint64_t frame_bytes =
      checked_mul(checked_mul(d[dx], d[dx + 1], where + " frame"), type->bytes, where + " frame");
  fi.codec.kind = FrameCodecKind::plain;
  fi.byte_order = t.little_endian || type->bytes == 1 ? "little" : "big";
  fi.precision = 8 * std::size_t(type->bytes);
  fi.records.files = {path};
  if (old_layout) {
    fi.source_kind += ", old transposed layout (detector pixel slowest)";
    fi.transposed = {true, data->offset, false, false};  // scan_pos = sc + scan_cols sr, det_pos = dc + det_cols dr
    fi.warnings.push_back(
        "the old transposed DM layout (no Data Order Swapped): each frame is scattered over the "
        "file, read in slabs of detector rows and scattered into place (dense)");
  } else {
    fi.records.runs = {{0, 0, frames, data->offset, frame_bytes, frame_bytes}};
  }
  fi.one_frame_per_chunk = true;
  fi.chunks_expected = fi.chunks_written = std::size_t(frames);
  fi.ready = true;
  return fi;
}

FileInfo inspect_dm(const std::string& path, const SourceOptions& o) {
  const std::string where = "DM file '" + path + "'";
  return describe_dm(parse_tags(path, where), path, o);
}

}  // namespace qgpu::io::dm
