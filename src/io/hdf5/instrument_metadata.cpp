#include "io/hdf5/instrument_metadata.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <map>
#include <optional>

#include "core/electron.hpp"
#include "core/error.hpp"
#include "core/number_text.hpp"
#include "io/hdf5/h5_handle.hpp"

namespace qgpu::io {

namespace {

namespace fs = std::filesystem;

const std::string kInstrument = "/entry/instrument";
const std::string kDetector = "/entry/instrument/detector";

// One number as read from a dataset or attribute: absent, a usable double, or the problem that makes it unusable.
struct Number {
  bool present = false;
  std::optional<double> value;  // set when present and a single finite number
  std::string units;            // the dataset's "units" attribute ("" when absent)
  std::string problem;          // why a present value is unusable
};

bool path_exists(hid_t loc, const std::string& path) {
  h5::QuietErrors quiet;
  std::size_t pos = 0;
  while ((pos = path.find('/', pos + 1)) != std::string::npos)
    if (H5Lexists(loc, path.substr(0, pos).c_str(), H5P_DEFAULT) <= 0) return false;
  return H5Lexists(loc, path.c_str(), H5P_DEFAULT) > 0;
}

// A short string attribute (units), "" when absent or not a string.
std::string string_attribute(hid_t obj, const char* name) {
  h5::QuietErrors quiet;
  if (H5Aexists(obj, name) <= 0) return "";
  h5::Handle a(H5Aopen(obj, name, H5P_DEFAULT), H5Aclose);
  if (!a.valid()) return "";
  h5::Handle t(H5Aget_type(a), H5Tclose);
  h5::Handle sp(H5Aget_space(a), H5Sclose);
  if (H5Tget_class(t) != H5T_STRING || H5Sget_simple_extent_npoints(sp) != 1) return "";
  std::string out;
  if (H5Tis_variable_str(t) > 0) {
    h5::Handle mt(H5Tcopy(H5T_C_S1), H5Tclose);
    H5Tset_size(mt, H5T_VARIABLE);
    H5Tset_cset(mt, H5Tget_cset(t));  // h5py writes UTF-8: HDF5 converts no character set into another
    char* s = nullptr;
    if (H5Aread(a, mt, &s) < 0) return "";
    if (s) out = std::string(s).substr(0, 64);
    H5free_memory(s);
  } else {
    const std::size_t n = H5Tget_size(t);
    if (n == 0 || n > 64) return "";
    std::string buf(n + 1, '\0');
    h5::Handle mt(H5Tcopy(H5T_C_S1), H5Tclose);
    H5Tset_size(mt, n + 1);
    H5Tset_cset(mt, H5Tget_cset(t));
    if (H5Aread(a, mt, buf.data()) < 0) return "";
    out = buf.substr(0, buf.find('\0'));
  }
  while (!out.empty() && std::isspace(static_cast<unsigned char>(out.back()))) out.pop_back();
  return out;
}

// Type and extent checks shared by datasets and attributes: one integer or float element.
std::string number_problem(hid_t type, hid_t space) {
  const H5T_class_t c = H5Tget_class(type);
  if (c == H5T_STRING) return "is a string, not a number";
  if (c != H5T_INTEGER && c != H5T_FLOAT) return "is not a number";
  const hssize_t n = H5Sget_simple_extent_npoints(space);
  if (n != 1) return "holds " + std::to_string(n) + " values, not one";
  return "";
}

Number finish(Number r, double v, const std::string& read_problem) {
  if (!read_problem.empty()) {
    r.problem = read_problem;
  } else if (!std::isfinite(v)) {
    r.problem = "is " + number_text(v) + ", not a finite number";
  } else {
    r.value = v;
  }
  return r;
}

// A numeric scalar dataset (or one-element array) at `path` of `loc`, with its units attribute.
Number dataset_number(hid_t loc, const std::string& path) {
  Number r;
  if (!path_exists(loc, path)) return r;
  r.present = true;
  h5::QuietErrors quiet;
  H5O_info_t oi;
  if (H5Oget_info_by_name2(loc, path.c_str(), &oi, H5O_INFO_BASIC, H5P_DEFAULT) < 0 || oi.type != H5O_TYPE_DATASET) {
    r.problem = "is not a dataset";
    return r;
  }
  h5::Handle ds(H5Dopen2(loc, path.c_str(), H5P_DEFAULT), H5Dclose);
  if (!ds.valid()) {
    r.problem = "cannot be opened";
    return r;
  }
  r.units = string_attribute(ds, "units");
  h5::Handle t(H5Dget_type(ds), H5Tclose);
  h5::Handle sp(H5Dget_space(ds), H5Sclose);
  std::string problem = number_problem(t, sp);
  if (problem.empty()) {  // a damaged layout storing fewer bytes than the value: HDF5 1.10 reads past its buffer
    h5::Handle dcpl(H5Dget_create_plist(ds), H5Pclose);
    const H5D_layout_t layout = dcpl.valid() ? H5Pget_layout(dcpl) : H5D_LAYOUT_ERROR;
    const hsize_t stored = H5Dget_storage_size(ds);
    const std::size_t size = H5Tget_size(t);
    if ((layout == H5D_CONTIGUOUS || layout == H5D_COMPACT) && stored < size)
      problem = "stores " + std::to_string(stored) + " bytes for a value of " + std::to_string(size);
  }
  double v = 0;
  if (problem.empty() && H5Dread(ds, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, &v) < 0) problem = "cannot be read";
  return finish(r, v, problem);
}

// A numeric attribute `name` of `obj` (scalar or one-element array).
Number attribute_number(hid_t obj, const char* name) {
  Number r;
  h5::QuietErrors quiet;
  if (H5Aexists(obj, name) <= 0) return r;
  r.present = true;
  h5::Handle a(H5Aopen(obj, name, H5P_DEFAULT), H5Aclose);
  if (!a.valid()) {
    r.problem = "cannot be opened";
    return r;
  }
  h5::Handle t(H5Aget_type(a), H5Tclose);
  h5::Handle sp(H5Aget_space(a), H5Sclose);
  std::string problem = number_problem(t, sp);
  double v = 0;
  if (problem.empty() && H5Aread(a, H5T_NATIVE_DOUBLE, &v) < 0) problem = "cannot be read";
  return finish(r, v, problem);
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return s;
}

// Factor to the base unit (m, eV, s) of a unit name, nothing when unknown.
std::optional<double> unit_factor(const std::string& kind, const std::string& unit) {
  static const std::map<std::string, std::map<std::string, double>> table = {
      {"length",
       {{"m", 1}, {"meter", 1}, {"metre", 1}, {"cm", 1e-2}, {"mm", 1e-3}, {"um", 1e-6}, {"\xc2\xb5m", 1e-6},
        {"micron", 1e-6}, {"nm", 1e-9}, {"a", 1e-10}, {"angstrom", 1e-10}, {"\xc3\x85", 1e-10}}},
      {"energy", {{"ev", 1}, {"kev", 1e3}, {"mev", 1e6}}},
      {"time", {{"s", 1}, {"sec", 1}, {"ms", 1e-3}, {"us", 1e-6}, {"\xc2\xb5s", 1e-6}, {"ns", 1e-9}}},
      {"pixel", {{"pixel", 1}, {"pixels", 1}, {"px", 1}}}};
  const auto& units = table.at(kind);
  const auto it = units.find(lower(unit));
  if (it == units.end()) return std::nullopt;
  return it->second;
}

// The readings of the NeXus and sidecar values, turned into calibration offers and warnings.
class Reader {
 public:
  explicit Reader(Calibration& cal) : cal_(cal) {}

  // A NeXus dataset in the base unit of its kind (m, eV, s, px) when usable, else a warning. `assumed`: the unit
  // DECTRIS documents, taken when the dataset has no units attribute.
  std::optional<double> nexus(hid_t file, const std::string& path, const std::string& kind, const std::string& assumed,
                              bool positive, std::string& text) {
    const Number n = dataset_number(file, path);
    if (!n.present) return std::nullopt;
    const std::string name = "NeXus " + path;
    if (!n.value) {
      cal_.warn(name + " " + n.problem + ": ignored");
      return std::nullopt;
    }
    std::string shown = number_text(*n.value) + " " + (n.units.empty() ? assumed : n.units);
    if (n.units.empty()) shown += ", no units attribute: " + assumed + " assumed";
    const std::optional<double> factor = unit_factor(kind, n.units.empty() ? assumed : n.units);
    if (!factor) {
      cal_.warn(name + " has units '" + n.units + "', not a " + kind + " unit known here: ignored");
      return std::nullopt;
    }
    const double v = *n.value * *factor;
    if (positive && !(v > 0)) {
      cal_.warn(name + " is " + shown + ", not > 0: ignored");
      return std::nullopt;
    }
    text = name + " (" + shown + ")";
    return v;
  }

  Calibration& cal_;
};

// "ARINA sidecar 'name.h5' STEM Metadata/<attr> (<value> <unit>)".
std::string sidecar_source(const std::string& file, const std::string& attr, double v, const std::string& unit) {
  return "ARINA sidecar '" + fs::path(file).filename().string() + "' " + kStemMetadataGroup + "/" + attr + " (" +
         number_text(v) + (unit.empty() ? "" : " " + unit) + ")";
}

// One value of the sidecar's STEM Metadata group: an attribute of the group, else a dataset inside it.
Number sidecar_number(hid_t group, const char* name) {
  Number n = attribute_number(group, name);
  if (n.present) return n;
  return dataset_number(group, name);
}

void read_sidecar(const std::string& sidecar, FileMetadata& md) {
  Calibration& cal = md.calibration;
  const std::string shown = "'" + fs::path(sidecar).filename().string() + "'";
  h5::Handle f;
  try {
    f = h5::open_file(sidecar);
  } catch (const IoError& e) {
    cal.warn("ARINA sidecar " + shown + " beside the master cannot be read (" + e.what() + "): ignored");
    return;
  }
  h5::QuietErrors quiet;
  if (H5Lexists(f, kStemMetadataGroup, H5P_DEFAULT) <= 0) {
    cal.warn(shown + " beside the master has no '" + std::string(kStemMetadataGroup) +
             "' group (not ARINA metadata): ignored");
    return;
  }
  h5::Handle g(H5Gopen2(f, kStemMetadataGroup, H5P_DEFAULT), H5Gclose);
  if (!g.valid()) {
    cal.warn(shown + " '" + std::string(kStemMetadataGroup) + "' is not a group: ignored");
    return;
  }
  md.sidecar = sidecar;
  const auto value = [&](const char* name, bool positive) -> std::optional<double> {
    const Number n = sidecar_number(g, name);
    if (!n.present) return std::nullopt;
    const std::string what = "ARINA sidecar " + shown + " " + kStemMetadataGroup + "/" + name;
    if (!n.value) {
      cal.warn(what + " " + n.problem + ": ignored");
      return std::nullopt;
    }
    if (positive && !(*n.value > 0)) {
      cal.warn(what + " is " + number_text(*n.value) + ", not > 0: ignored");
      return std::nullopt;
    }
    return n.value;
  };
  // Scan shape: whole numbers up to 2^32 each.
  const auto count = [&](const char* name) -> std::optional<long long> {
    const std::optional<double> v = value(name, true);
    if (!v) return std::nullopt;
    if (*v != std::floor(*v) || *v > 4294967296.0) {
      cal.warn("ARINA sidecar " + shown + " " + kStemMetadataGroup + "/" + name + " is " + number_text(*v) +
               ", not a whole number of scan pixels: ignored");
      return std::nullopt;
    }
    return static_cast<long long>(*v);
  };
  const std::optional<long long> nx = count("NumPixelsX"), ny = count("NumPixelsY");
  if (nx && ny) {
    md.sidecar_scan = {*ny, *nx};
    md.sidecar_scan_source = json_safe("ARINA sidecar " + shown + " " + kStemMetadataGroup + " NumPixelsY x NumPixelsX");
    const Number pre = sidecar_number(g, "NumPixelsPrescan");
    if (pre.value && *pre.value > 0)
      md.sidecar_scan_source += " (NumPixelsPrescan " + number_text(*pre.value) + " not taken into account)";
  } else if (nx || ny) {
    cal.warn("ARINA sidecar " + shown + " gives only one of NumPixelsX / NumPixelsY: no scan shape from it");
  }
  if (const auto ht = value("High Tension", true)) {
    const bool volts = *ht >= 1000;
    cal.offer("energy_kev", volts ? *ht / 1e3 : *ht, "keV",
              sidecar_source(sidecar, "High Tension", *ht, volts ? "V" : "read as kV"));
  }
  if (const auto px = value("Pixel Size", true)) {
    std::string src = sidecar_source(sidecar, "Pixel Size", *px, "nm");
    const Number calibrated = sidecar_number(g, "IsPixelSizeCalibrated");
    if (calibrated.value && *calibrated.value == 0) src += ", IsPixelSizeCalibrated 0: nominal";
    cal.offer("scan_step_angstrom", *px * 10, "angstrom", src);
  }
  if (const auto cl = value("Camera Length", true)) {
    const bool metres = *cl < 10;
    cal.offer("camera_length_m", metres ? *cl : *cl / 1e3, "m",
              sidecar_source(sidecar, "Camera Length", *cl, metres ? "m" : "read as mm"));
  }
  if (const auto rot = value("Rotation", false))
    cal.offer("scan_rotation_deg", *rot, "deg", sidecar_source(sidecar, "Rotation", *rot, "deg"));
}

void read_own_calibration(hid_t file, Calibration& cal) {
  const char* group = "/entry/calibration";
  if (!path_exists(file, group)) return;
  h5::QuietErrors quiet;
  h5::Handle g(H5Gopen2(file, group, H5P_DEFAULT), H5Gclose);
  if (!g.valid()) return;
  H5O_info_t info;
  if (H5Oget_info2(g, &info, H5O_INFO_NUM_ATTRS) < 0) return;
  for (hsize_t i = 0; i < info.num_attrs && i < 4096; ++i) {
    h5::Handle a(H5Aopen_by_idx(g, ".", H5_INDEX_NAME, H5_ITER_INC, i, H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
    if (!a.valid()) continue;
    char name[256] = {0};
    H5Aget_name(a, sizeof(name), name);
    const Number n = attribute_number(g, name);
    const std::string where = std::string(group) + " attribute " + name;
    if (n.value)
      cal.offer(name, *n.value, calibration_unit(name), where);
    else
      cal.warn(where + " " + n.problem + ": ignored");
  }
}

void read_nexus(hid_t file, std::size_t det_rows, std::size_t det_cols, Calibration& cal) {
  if (!path_exists(file, kInstrument)) return;
  Reader r(cal);
  std::string src;
  // Energy: stated in eV, or from the electron wavelength.
  for (const std::string& path : {kInstrument + "/beam/incident_energy", kDetector + "/detectorSpecific/photon_energy"})
    if (const auto ev = r.nexus(file, path, "energy", "eV", true, src)) cal.offer("energy_kev", *ev / 1e3, "keV", src);
  if (const auto m = r.nexus(file, kInstrument + "/beam/incident_wavelength", "length", "angstrom", true, src)) {
    const double angstrom = *m * 1e10;
    const double kev = electron_energy_kev(angstrom);
    const CalibrationValue* known = cal.find("energy_kev");
    const auto near = [](double a, double b) { return std::abs(a - b) <= 0.01 * std::max(a, b); };
    if (known && !near(kev, known->value) && near(photon_energy_kev(angstrom), known->value)) {
      cal.warn(src + " is h c / E of the " + number_text(known->value) +
               " keV energy (the photon relation), not the electron wavelength: not used");
    } else {
      cal.offer("wavelength_angstrom", angstrom, "angstrom", src);
      cal.offer("energy_kev", kev, "keV", src + " by the relativistic electron wavelength");
    }
  }
  // Detector geometry.
  std::string sx, sy;
  const auto px = r.nexus(file, kDetector + "/x_pixel_size", "length", "m", true, sx);
  const auto py = r.nexus(file, kDetector + "/y_pixel_size", "length", "m", true, sy);
  if (px) {
    cal.offer("detector_pixel_size_m", *px, "m", sx);
    if (py && std::abs(*px - *py) > 0.01 * *px)
      cal.warn("non-square detector pixels (" + sx + ", " + sy + "): x_pixel_size used for the angular sampling");
  } else if (py) {
    cal.offer("detector_pixel_size_m", *py, "m", sy);
  }
  if (const auto d = r.nexus(file, kDetector + "/detector_distance", "length", "m", true, src))
    cal.offer("camera_length_m", *d, "m", src);
  std::string bx, by;
  const auto cx = r.nexus(file, kDetector + "/beam_center_x", "pixel", "pixel", false, bx);
  const auto cy = r.nexus(file, kDetector + "/beam_center_y", "pixel", "pixel", false, by);
  if (cx && cy) {
    if (*cx == 0 && *cy == 0)
      cal.warn("NeXus " + kDetector + "/beam_center_x, beam_center_y are (0, 0): not set by the detector, ignored");
    else if (*cx < 0 || *cy < 0 || *cx > double(det_cols) || *cy > double(det_rows))
      cal.warn("NeXus beam centre (x " + number_text(*cx) + ", y " + number_text(*cy) + ") px lies outside the " +
               std::to_string(det_rows) + " x " + std::to_string(det_cols) + " detector: ignored");
    else {
      cal.offer("beam_center_row_px", *cy, "px", by);
      cal.offer("beam_center_col_px", *cx, "px", bx);
    }
  } else if (cx || cy) {
    cal.warn("NeXus " + kDetector + " gives only one of beam_center_x / beam_center_y: no beam centre");
  }
  if (const auto t = r.nexus(file, kDetector + "/count_time", "time", "s", true, src)) cal.offer("count_time_s", *t, "s", src);
  if (const auto t = r.nexus(file, kDetector + "/frame_time", "time", "s", true, src)) cal.offer("frame_time_s", *t, "s", src);
}

}  // namespace

std::string arina_sidecar_path(const std::string& master_path) {
  const fs::path p(master_path);
  const std::string name = p.filename().string();
  const std::string suffix = "_master.h5";
  if (name.size() <= suffix.size() || name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0) return "";
  return (p.parent_path() / (name.substr(0, name.size() - suffix.size()) + ".h5")).string();
}

FileMetadata read_file_metadata(hid_t file, const std::string& path, std::size_t det_rows, std::size_t det_cols) {
  FileMetadata md;
  Calibration& cal = md.calibration;
  read_own_calibration(file, cal);
  const std::string sidecar = arina_sidecar_path(path);
  std::error_code ec;
  if (!sidecar.empty() && fs::exists(fs::symlink_status(sidecar, ec))) read_sidecar(sidecar, md);
  read_nexus(file, det_rows, det_cols, cal);
  // The detector's angular sampling where both its pixel size and the camera length are known.
  const CalibrationValue* p = cal.find("detector_pixel_size_m");
  const CalibrationValue* l = cal.find("camera_length_m");
  if (p && l)
    cal.offer("detector_mrad_per_pixel", 1e3 * p->value / l->value, "mrad/px",
              "detector pixel size / camera length (" + number_text(p->value) + " m / " + number_text(l->value) +
                  " m)");
  return md;
}

}  // namespace qgpu::io
