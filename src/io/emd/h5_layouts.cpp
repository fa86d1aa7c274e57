#include "io/emd/h5_layouts.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <cstdint>
#include <cstdio>

#include "core/electron.hpp"
#include "core/error.hpp"
#include "io/hdf5/h5_handle.hpp"

namespace qgpu::io::emd {

namespace {

constexpr std::size_t kMaxChildren = 4096;      // groups listed per level (a sanity limit for hostile files)
constexpr std::size_t kMaxDimValues = 1 << 24;  // values of one dim vector read

std::string num_text(double v) {
  char s[64];
  std::snprintf(s, sizeof s, "%.10g", v);
  return s;
}

bool has_attr(hid_t obj, const char* name) {
  h5::QuietErrors quiet;
  return H5Aexists(obj, name) > 0;
}

bool link_exists(hid_t loc, const std::string& name) {
  h5::QuietErrors quiet;
  return H5Lexists(loc, name.c_str(), H5P_DEFAULT) > 0;
}

// The string in a scalar (or one-element) string attribute or dataset, fixed or variable length; FormatError naming
// `what` when it holds something else.
std::string read_string(hid_t obj, hid_t type, hid_t space, bool attribute, const std::string& what) {
  if (H5Tget_class(type) != H5T_STRING || H5Sget_simple_extent_npoints(space) != 1)
    throw FormatError(what + " is not one string (HDF5 class " + std::to_string(int(H5Tget_class(type))) + ", " +
                      std::to_string(H5Sget_simple_extent_npoints(space)) + " values)");
  std::string out;
  if (H5Tis_variable_str(type) > 0) {
    h5::Handle mt(H5Tcopy(H5T_C_S1), H5Tclose);
    H5Tset_size(mt, H5T_VARIABLE);
    H5Tset_cset(mt, H5Tget_cset(type));
    char* s = nullptr;
    const herr_t rc = attribute ? H5Aread(obj, mt, &s) : H5Dread(obj, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, &s);
    if (rc < 0) throw FormatError(what + " cannot be read as a string");
    if (s) out = s;
    H5free_memory(s);
  } else {
    const std::size_t n = H5Tget_size(type);
    if (n == 0 || n > 4096) throw FormatError(what + " is a string of " + std::to_string(n) + " bytes");
    // One byte more in memory: a null-terminated memory type of the stored size would drop the last character of
    // a null-padded string that fills it ("mrad" in 4 bytes read back as "mra").
    std::string buf(n + 1, '\0');
    h5::Handle mt(H5Tcopy(H5T_C_S1), H5Tclose);
    H5Tset_size(mt, n + 1);
    H5Tset_cset(mt, H5Tget_cset(type));
    const herr_t rc = attribute ? H5Aread(obj, mt, buf.data()) : H5Dread(obj, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf.data());
    if (rc < 0) throw FormatError(what + " cannot be read as a string");
    out = buf.substr(0, buf.find('\0'));
  }
  if (out.size() > 4096) out.resize(4096);
  return json_safe(out);
}

// Numbers (integers, floats, or a bool enum) of an attribute or dataset; FormatError naming `what` for anything else.
std::vector<double> read_numbers(hid_t obj, hid_t type, hid_t space, bool attribute, const std::string& what) {
  const H5T_class_t cls = H5Tget_class(type);
  const hssize_t n = H5Sget_simple_extent_npoints(space);
  if (n < 0 || std::size_t(n) > kMaxDimValues)
    throw FormatError(what + " holds " + std::to_string(n) + " values");
  std::vector<double> v(std::size_t(n), 0.0);
  if (cls == H5T_INTEGER || cls == H5T_FLOAT) {
    const herr_t rc = attribute ? H5Aread(obj, H5T_NATIVE_DOUBLE, v.data())
                                : H5Dread(obj, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data());
    if (rc < 0) throw FormatError(what + " cannot be read as numbers");
    return v;
  }
  if (cls == H5T_ENUM) {  // h5py's bool: an enum over int8 (FALSE 0, TRUE 1)
    h5::Handle super(H5Tget_super(type), H5Tclose);
    if (H5Tget_class(super) != H5T_INTEGER || H5Tget_size(super) > 8) throw FormatError(what + " is an enum of non-integers");
    std::vector<long long> w(std::size_t(n), 0);
    // The enum's values through its integer base type (HDF5 does not convert an enum to an integer directly).
    h5::Handle base(H5Tcopy(super), H5Tclose);
    std::vector<std::uint8_t> raw(std::size_t(n) * H5Tget_size(super));
    const herr_t rc = attribute ? H5Aread(obj, type, raw.data())
                                : H5Dread(obj, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, raw.data());
    if (rc < 0) throw FormatError(what + " cannot be read");
    std::vector<std::uint8_t> wide(std::size_t(n) * 8);
    std::copy(raw.begin(), raw.end(), wide.begin());
    if (H5Tconvert(base, H5T_NATIVE_LLONG, std::size_t(n), wide.data(), nullptr, H5P_DEFAULT) < 0)
      throw FormatError(what + " cannot be read as integers");
    std::memcpy(w.data(), wide.data(), w.size() * 8);
    for (std::size_t i = 0; i < w.size(); ++i) v[i] = double(w[i]);
    return v;
  }
  throw FormatError(what + " holds neither numbers nor a bool (HDF5 class " + std::to_string(int(cls)) + ")");
}

// The attribute opened, with its type and space, handed to f with its description (FormatError when it cannot be
// opened).
template <class F> auto with_attr(hid_t obj, const char* name, const std::string& where, F&& f) {
  h5::QuietErrors quiet;
  h5::Handle a(H5Aopen(obj, name, H5P_DEFAULT), H5Aclose);
  if (!a.valid()) throw FormatError(where + " attribute " + name + " cannot be opened");
  h5::Handle t(H5Aget_type(a), H5Tclose);
  h5::Handle sp(H5Aget_space(a), H5Sclose);
  return f(a, t, sp, where + " attribute " + name);
}

std::optional<std::string> string_attr(hid_t obj, const char* name, const std::string& where) {
  if (!has_attr(obj, name)) return std::nullopt;
  return with_attr(obj, name, where, [](const h5::Handle& a, const h5::Handle& t, const h5::Handle& sp,
                                        const std::string& what) { return read_string(a, t, sp, true, what); });
}

std::optional<double> number_attr(hid_t obj, const char* name, const std::string& where) {
  if (!has_attr(obj, name)) return std::nullopt;
  const std::vector<double> v = with_attr(
      obj, name, where, [](const h5::Handle& a, const h5::Handle& t, const h5::Handle& sp, const std::string& what) {
        return read_numbers(a, t, sp, true, what);
      });
  if (v.size() != 1)
    throw FormatError(where + " attribute " + name + " holds " + std::to_string(v.size()) + " values; expected one");
  return v[0];
}

// A dataset's numbers or its string, whichever it holds.
struct Item {
  bool present = false, is_string = false;
  std::string text;
  std::vector<double> numbers;
};

Item read_item(hid_t loc, const std::string& name, const std::string& where) {
  Item it;
  if (!link_exists(loc, name)) return it;
  h5::QuietErrors quiet;
  h5::Handle ds(H5Dopen2(loc, name.c_str(), H5P_DEFAULT), H5Dclose);
  if (!ds.valid()) throw FormatError(where + " '" + name + "' is not a dataset");
  h5::Handle t(H5Dget_type(ds), H5Tclose);
  h5::Handle sp(H5Dget_space(ds), H5Sclose);
  it.present = true;
  if (H5Tget_class(t) == H5T_STRING) {
    it.is_string = true;
    if (H5Sget_simple_extent_npoints(sp) == 1) it.text = read_string(ds, t, sp, false, where + " '" + name + "'");
  } else {
    it.numbers = read_numbers(ds, t, sp, false, where + " '" + name + "'");
  }
  return it;
}

std::vector<std::string> children(hid_t group, const std::string& where) {
  std::vector<std::string> names;
  H5G_info_t gi{};
  h5::QuietErrors quiet;
  if (H5Gget_info(group, &gi) < 0) throw FormatError(where + " cannot be listed");
  if (gi.nlinks > kMaxChildren)
    throw FormatError(where + " has " + std::to_string(gi.nlinks) + " members, more than " +
                      std::to_string(kMaxChildren) + " (not a datacube file)");
  for (hsize_t i = 0; i < gi.nlinks; ++i) {
    const ssize_t n = H5Lget_name_by_idx(group, ".", H5_INDEX_NAME, H5_ITER_INC, i, nullptr, 0, H5P_DEFAULT);
    if (n <= 0 || n > 4096) continue;
    std::string s(std::size_t(n) + 1, '\0');
    H5Lget_name_by_idx(group, ".", H5_INDEX_NAME, H5_ITER_INC, i, s.data(), s.size(), H5P_DEFAULT);
    s.resize(std::size_t(n));
    names.push_back(s);
  }
  return names;
}

bool is_group(hid_t loc, const std::string& name) {
  if (!link_exists(loc, name)) return false;
  h5::QuietErrors quiet;
  h5::Handle g(H5Gopen2(loc, name.c_str(), H5P_DEFAULT), H5Gclose);
  return g.valid();
}

h5::Handle open_group(hid_t loc, const std::string& name) {
  h5::QuietErrors quiet;
  return h5::Handle(H5Gopen2(loc, name.c_str(), H5P_DEFAULT), H5Gclose);
}

// The dims of a dataset ("" path: FormatError when absent or not a dataset).
std::vector<std::size_t> dataset_dims(hid_t loc, const std::string& name, const std::string& where) {
  h5::QuietErrors quiet;
  h5::Handle ds(H5Dopen2(loc, name.c_str(), H5P_DEFAULT), H5Dclose);
  if (!ds.valid()) throw FormatError(where + " has no dataset '" + name + "'");
  h5::Handle sp(H5Dget_space(ds), H5Sclose);
  const int rank = H5Sget_simple_extent_ndims(sp);
  if (rank < 0 || rank > 32) throw FormatError(where + " '" + name + "' has an unreadable shape");
  std::vector<hsize_t> d(static_cast<std::size_t>(rank), 0);
  H5Sget_simple_extent_dims(sp, d.data(), nullptr);
  return std::vector<std::size_t>(d.begin(), d.end());
}

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\0')) s.pop_back();
  std::size_t a = 0;
  while (a < s.size() && s[a] == ' ') ++a;
  return s.substr(a);
}

std::optional<double> angstrom_per(const std::string& unit) {
  if (unit == "A" || unit == "Å" || unit == "angstrom" || unit == "Angstrom" || unit == "Angstroms") return 1.0;
  if (unit == "nm") return 10.0;
  if (unit == "pm") return 0.01;
  if (unit == "um" || unit == "µm" || unit == "μm" || unit == "micron") return 1e4;
  return std::nullopt;
}

std::optional<double> inv_angstrom_per(const std::string& unit) {
  if (unit == "A^-1" || unit == "1/A" || unit == "1/Å" || unit == "Å^-1" || unit == "1/angstrom") return 1.0;
  if (unit == "nm^-1" || unit == "1/nm") return 0.1;
  return std::nullopt;
}

// ---------------------------------------------------------------------------------------------------------------
// EMD 1.0

struct EmdArray {
  std::string root, group, python_class;
  std::vector<std::size_t> dims;
};

// The linear step of a dim vector ([start, step-end] of 2 values, or one value per pixel evenly spaced); nullopt
// with a warning when it is not linear.
std::optional<double> dim_step(const std::vector<double>& v, std::size_t length, const std::string& what,
                               Calibration& cal) {
  if (v.size() == 2) return v[1] - v[0];
  if (v.size() != length)
    throw FormatError(what + " has " + std::to_string(v.size()) + " values; an EMD dim vector has 2 ([start, next]) or "
                      "one per pixel (" + std::to_string(length) + ")");
  if (length < 2) return std::nullopt;
  const double step = v[1] - v[0];
  for (std::size_t i = 2; i < v.size(); ++i)
    if (std::fabs((v[i] - v[0]) - step * double(i)) > 1e-6 * std::fabs(step) * double(i) + 1e-300) {
      cal.warn(what + " is not evenly spaced: no calibration from it");
      return std::nullopt;
    }
  return step;
}

void emd_calibration(hid_t file, const EmdArray& a, H5Layout& out) {
  Calibration& cal = out.calibration;
  const std::string arr = "/" + a.root + "/" + a.group;
  h5::Handle g = open_group(file, arr);
  nlohmann::json dims = nlohmann::json::array();
  std::vector<double> step(4, 0);
  std::vector<std::string> units(4);
  std::vector<bool> have(4, false);
  const std::size_t rank = a.dims.size();
  for (std::size_t n = 0; n < rank; ++n) {
    const std::string name = "dim" + std::to_string(n);
    const std::string what = "EMD " + arr + "/" + name;
    if (!link_exists(g, name)) {
      out.warnings.push_back(what + " is missing: that axis is uncalibrated");
      dims.push_back(nullptr);
      continue;
    }
    const Item it = read_item(g, name, "EMD " + arr);
    if (it.is_string) throw FormatError(what + " holds strings; a datacube's dim vectors are numbers");
    h5::QuietErrors quiet;
    h5::Handle ds(H5Dopen2(g, name.c_str(), H5P_DEFAULT), H5Dclose);
    const std::string u = trim(string_attr(ds, "units", what).value_or(""));
    const std::string nm = string_attr(ds, "name", what).value_or("");
    const auto s = dim_step(it.numbers, a.dims[n], what, cal);
    dims.push_back({{"name", nm}, {"units", u}, {"step", s ? nlohmann::json(*s) : nlohmann::json()}});
    if (n < 4 && s) {
      step[n] = *s;
      units[n] = u;
      have[n] = true;
    }
  }
  out.metadata["emd_dims"] = dims;

  // py4DSTEM's Calibration: the root's metadatabundle/calibration (or the array's own).
  std::string cal_group;
  for (const std::string& p : {"/" + a.root + "/metadatabundle/calibration", arr + "/metadatabundle/calibration"})
    if (is_group(file, p)) {
      cal_group = p;
      break;
    }
  bool scan_done = false, det_done = false;
  if (!cal_group.empty()) {
    out.metadata["emd_calibration"] = cal_group;
    h5::Handle cg = open_group(file, cal_group);
    const std::string where = "EMD " + cal_group;
    const auto number = [&](const char* key) -> std::optional<double> {
      const Item it = read_item(cg, key, where);
      if (!it.present) return std::nullopt;
      if (it.is_string || it.numbers.size() != 1)
        throw FormatError(where + "/" + key + " is " + (it.is_string ? "a string '" + it.text + "'" :
                          std::to_string(it.numbers.size()) + " values") + "; expected one number");
      return it.numbers[0];
    };
    const auto text = [&](const char* key) -> std::string {
      const Item it = read_item(cg, key, where);
      if (!it.present) return "";
      if (!it.is_string) throw FormatError(where + "/" + key + " is not a string; expected a unit");
      return trim(it.text);
    };
    const auto rs = number("R_pixel_size"), qs = number("Q_pixel_size");
    const std::string ru = text("R_pixel_units"), qu = text("Q_pixel_units");
    if (rs && ru != "pixels" && !ru.empty())
      scan_done = offer_scan_step(cal, *rs, ru, where + "/R_pixel_size (" + num_text(*rs) + " " + ru + ")");
    if (qs && qu != "pixels" && !qu.empty())
      det_done = offer_detector_pixel(cal, *qs, qu, where + "/Q_pixel_size (" + num_text(*qs) + " " + qu + ")");
    const auto qx0 = number("qx0_mean"), qy0 = number("qy0_mean");
    if (qx0 && qy0) {
      cal.offer("beam_center_row_px", *qx0, "px", where + "/qx0_mean");
      cal.offer("beam_center_col_px", *qy0, "px", where + "/qy0_mean");
    }
    for (const char* k : {"QR_rotation_degrees", "QR_flip", "probe_semiangle", "accelerating_voltage"})
      if (const Item it = read_item(cg, k, where); it.present && !it.is_string && it.numbers.size() == 1)
        out.metadata["emd_" + std::string(k)] = it.numbers[0];
  }
  // Without a Calibration, the dim vectors' steps (Rx, Ry, Qx, Qy).
  const std::size_t sx = rank == 4 ? 0 : 3, dx = rank == 4 ? 2 : 1;
  if (!scan_done && rank == 4 && have[sx] && units[sx] != "pixels" && !units[sx].empty())
    offer_scan_step(cal, step[sx], units[sx], "EMD " + arr + "/dim0 step (" + num_text(step[sx]) + " " + units[sx] + ")");
  if (!det_done && dx < 4 && have[dx] && units[dx] != "pixels" && !units[dx].empty())
    offer_detector_pixel(cal, step[dx], units[dx],
                         "EMD " + arr + "/dim" + std::to_string(dx) + " step (" + num_text(step[dx]) + " " +
                             units[dx] + ")");
}

std::optional<H5Layout> detect_emd(hid_t file, const std::string& dataset_path) {
  const std::string where = "EMD file";
  const auto major = number_attr(file, "version_major", where);
  const auto minor = number_attr(file, "version_minor", where);
  if (!major) throw FormatError("EMD file (root attribute emd_group_type = 'file') has no version_major attribute");
  if (*major != 1 && !dataset_path.empty()) return std::nullopt;  // the way out named below: plain HDF5 reading
  if (*major != 1)
    throw FormatError("EMD file version_major is " + num_text(*major) + (minor ? "." + num_text(*minor) : "") +
                      "; read is EMD 1.0 (py4DSTEM >= 0.14, emdfile); give dataset_path to read one of its datasets "
                      "as plain HDF5");
  H5Layout out;
  out.kind = "py4DSTEM EMD 1.0";
  out.metadata["layout"] = out.kind;
  out.metadata["emd_version"] = num_text(*major) + "." + (minor ? num_text(*minor) : "?");
  if (const auto p = string_attr(file, "authoring_program", where)) out.metadata["emd_authoring_program"] = *p;

  // Every array group under every root; a DataCube first.
  std::vector<EmdArray> arrays;
  std::vector<std::string> roots;
  for (const std::string& r : children(file, "EMD file /")) {
    if (!is_group(file, r)) continue;
    h5::Handle g = open_group(file, r);
    const auto t = string_attr(g, "emd_group_type", "EMD /" + r);
    if (!t || *t != "root") continue;
    roots.push_back(r);
    for (const std::string& c : children(g, "EMD /" + r)) {
      if (!is_group(g, c)) continue;
      h5::Handle cg = open_group(g, c);
      const auto ct = string_attr(cg, "emd_group_type", "EMD /" + r + "/" + c);
      if (!ct || *ct != "array") continue;
      EmdArray a;
      a.root = r;
      a.group = c;
      a.python_class = string_attr(cg, "python_class", "EMD /" + r + "/" + c).value_or("");
      if (!link_exists(cg, "data"))
        throw FormatError("EMD array /" + r + "/" + c + " (emd_group_type 'array') has no dataset 'data'");
      a.dims = dataset_dims(cg, "data", "EMD array /" + r + "/" + c);
      arrays.push_back(a);
    }
  }
  if (roots.empty())
    throw FormatError("EMD 1.0 file has no root group (a top-level group with emd_group_type = 'root')");
  const EmdArray* pick = nullptr;
  std::vector<std::string> others;
  const auto path_of = [](const EmdArray& a) { return "/" + a.root + "/" + a.group + "/data"; };
  if (!dataset_path.empty()) {
    for (const EmdArray& a : arrays)
      if (path_of(a) == dataset_path || path_of(a).substr(1) == dataset_path) pick = &a;
    if (!pick) return std::nullopt;
  } else {
    for (int pass = 0; pass < 2 && !pick; ++pass)
      for (const EmdArray& a : arrays)
        if ((a.dims.size() == 4 || (pass == 1 && a.dims.size() == 3)) && (pass == 1 || a.python_class == "DataCube") &&
            !pick)
          pick = &a;
    if (!pick) pick = nullptr;
    for (const EmdArray& a : arrays)
      if (pick && &a != pick && (a.dims.size() == 4 || a.python_class == "DataCube")) others.push_back(path_of(a));
  }
  if (!pick) {
    std::string listed;
    for (const EmdArray& a : arrays) listed += (listed.empty() ? "" : ", ") + path_of(a) + " (rank " +
                                               std::to_string(a.dims.size()) + ")";
    throw FormatError("EMD 1.0 file holds no 4D datacube (an array group with a 4D 'data'); arrays: " +
                      (listed.empty() ? std::string("none") : listed));
  }
  if (pick->dims.size() != 4 && pick->dims.size() != 3)
    throw FormatError("EMD array " + path_of(*pick) + " has rank " + std::to_string(pick->dims.size()) +
                      "; a datacube is (Rx, Ry, Qx, Qy)");
  if (!others.empty()) {
    std::string s;
    for (const std::string& o : others) s += (s.empty() ? "" : ", ") + o;
    out.warnings.push_back("EMD file holds several datacubes: " + path_of(*pick) + " is read (give dataset_path for "
                           "another: " + s + ")");
  }
  out.dataset = path_of(*pick);
  out.metadata["emd_array"] = "/" + pick->root + "/" + pick->group;
  out.metadata["emd_python_class"] = pick->python_class;
  emd_calibration(file, *pick, out);
  return out;
}

// ---------------------------------------------------------------------------------------------------------------
// HyperSpy

std::optional<H5Layout> detect_hspy(hid_t file, const std::string& dataset_path) {
  H5Layout out;
  out.kind = "HyperSpy";
  out.metadata["layout"] = out.kind;
  if (const auto v = string_attr(file, "file_format_version", "HyperSpy file")) out.metadata["hspy_version"] = *v;
  if (!is_group(file, "Experiments"))
    throw FormatError("HyperSpy file (file_format = 'HyperSpy') has no /Experiments group");
  h5::Handle ex = open_group(file, "Experiments");
  std::string pick;
  std::vector<std::size_t> dims;
  std::vector<std::string> others;
  for (const std::string& c : children(ex, "HyperSpy /Experiments")) {
    if (!is_group(ex, c)) continue;
    h5::Handle g = open_group(ex, c);
    if (!link_exists(g, "data")) continue;
    const std::string p = "/Experiments/" + c + "/data";
    const auto d = dataset_dims(g, "data", "HyperSpy /Experiments/" + c);
    if (!dataset_path.empty()) {
      if (p == dataset_path || p.substr(1) == dataset_path) {
        pick = c;
        dims = d;
      }
      continue;
    }
    if (d.size() == 4 || d.size() == 3) {
      if (pick.empty()) {
        pick = c;
        dims = d;
      } else if (d.size() == 4) {
        others.push_back(p);
      }
    }
  }
  if (pick.empty()) {
    if (!dataset_path.empty()) return std::nullopt;
    throw FormatError("HyperSpy file holds no 4D signal (/Experiments/<title>/data of rank 4: scan y, scan x, "
                      "detector y, detector x)");
  }
  if (!others.empty()) {
    std::string s;
    for (const std::string& o : others) s += (s.empty() ? "" : ", ") + o;
    out.warnings.push_back("HyperSpy file holds several signals: /Experiments/" + pick + "/data is read (give "
                           "dataset_path for another: " + s + ")");
  }
  const std::string sig = "/Experiments/" + pick;
  out.dataset = sig + "/data";
  out.metadata["hspy_signal"] = sig;
  if (dims.size() != 4 && dims.size() != 3)
    throw FormatError("HyperSpy " + out.dataset + " has rank " + std::to_string(dims.size()) +
                      "; a 4D-STEM signal has 2 navigation and 2 signal axes");
  h5::Handle g = open_group(file, sig);
  struct Axis {
    double scale = 1, offset = 0;
    std::string units, name;
    bool navigate = false;
  };
  std::vector<Axis> axes(dims.size());
  nlohmann::json axes_json = nlohmann::json::array();
  for (std::size_t i = 0; i < dims.size(); ++i) {
    const std::string an = "axis-" + std::to_string(i);
    const std::string what = "HyperSpy " + sig + "/" + an;
    if (!is_group(g, an)) throw FormatError(what + " is missing (one axis group per data dimension)");
    h5::Handle ag = open_group(g, an);
    Axis& a = axes[i];
    const auto size = number_attr(ag, "size", what);
    if (size && *size != double(dims[i]))
      throw FormatError(what + " size is " + num_text(*size) + " but the data's dimension " + std::to_string(i) +
                        " is " + std::to_string(dims[i]));
    const auto nav = number_attr(ag, "navigate", what);
    if (!nav) throw FormatError(what + " has no 'navigate' attribute (navigation or signal axis)");
    a.navigate = *nav != 0;
    if (const auto s = number_attr(ag, "scale", what)) a.scale = *s;
    if (const auto o = number_attr(ag, "offset", what)) a.offset = *o;
    a.units = trim(string_attr(ag, "units", what).value_or(""));
    a.name = string_attr(ag, "name", what).value_or("");
    if (a.units == "<undefined>") a.units.clear();
    axes_json.push_back({{"name", a.name}, {"scale", a.scale}, {"offset", a.offset}, {"units", a.units},
                         {"size", dims[i]}, {"navigate", a.navigate}});
  }
  out.metadata["hspy_axes"] = axes_json;
  const std::size_t nav = dims.size() - 2;
  for (std::size_t i = 0; i < dims.size(); ++i)
    if (axes[i].navigate != (i < nav))
      throw FormatError("HyperSpy " + sig + "/axis-" + std::to_string(i) + " navigate is " +
                        (axes[i].navigate ? "true" : "false") + ": read are signals whose " + std::to_string(nav) +
                        " navigation axes come first and whose 2 signal (detector) axes are the last two dimensions");
  Calibration& cal = out.calibration;
  const auto src = [&](std::size_t i) {
    return "HyperSpy " + sig + "/axis-" + std::to_string(i) + " scale (" + num_text(axes[i].scale) + " " +
           axes[i].units + ")";
  };
  {
    // metadata/Acquisition_instrument/TEM beam_energy (keV), as HyperSpy writes it
    const std::string tem = sig + "/metadata/Acquisition_instrument/TEM";
    if (is_group(file, tem)) {
      h5::Handle tg = open_group(file, tem);
      if (const auto e = number_attr(tg, "beam_energy", "HyperSpy " + tem)) {
        if (std::isfinite(*e) && *e > 0)
          cal.offer("energy_kev", *e, "keV", "HyperSpy " + tem + " beam_energy (" + num_text(*e) + " keV)");
        else
          cal.warn("HyperSpy " + tem + " beam_energy " + num_text(*e) + " is not a positive number: ignored");
      }
      if (const auto c = number_attr(tg, "convergence_angle", "HyperSpy " + tem)) {
        if (std::isfinite(*c) && *c > 0)
          cal.offer("semiangle_mrad", *c, "mrad", "HyperSpy " + tem + " convergence_angle (" + num_text(*c) + " mrad)");
      }
    }
  }
  if (nav == 2 && !axes[1].units.empty()) {
    offer_scan_step(cal, axes[1].scale, axes[1].units, src(1));
    const auto a = angstrom_per(axes[0].units), b = angstrom_per(axes[1].units);
    if (a && b && std::fabs(axes[0].scale * *a - axes[1].scale * *b) > 0.01 * std::fabs(axes[1].scale * *b))
      cal.warn("HyperSpy " + sig + " scan y step differs from scan x: the x step is used");
  }
  const std::size_t dy = nav, dxx = nav + 1;
  if (!axes[dxx].units.empty()) offer_detector_pixel(cal, axes[dxx].scale, axes[dxx].units, src(dxx));
  // HyperSpy centres the signal axes with offset = -centre x scale: the beam centre in pixels.
  if (axes[dy].offset != 0 && axes[dxx].offset != 0 && axes[dy].scale != 0 && axes[dxx].scale != 0 &&
      std::isfinite(axes[dy].offset) && std::isfinite(axes[dxx].offset)) {
    const double r = -axes[dy].offset / axes[dy].scale, c = -axes[dxx].offset / axes[dxx].scale;
    if (r >= 0 && c >= 0 && r <= double(dims[dy] - 1) && c <= double(dims[dxx] - 1)) {
      cal.offer("beam_center_row_px", r, "px", "HyperSpy " + sig + "/axis-" + std::to_string(dy) + " -offset/scale");
      cal.offer("beam_center_col_px", c, "px", "HyperSpy " + sig + "/axis-" + std::to_string(dxx) + " -offset/scale");
    } else {
      cal.warn("HyperSpy " + sig + " signal axis offsets put the beam centre at (" + num_text(r) + ", " + num_text(c) +
               ") px, outside the detector: not used");
    }
  }
  return out;
}

}  // namespace

bool offer_scan_step(Calibration& cal, double scale, const std::string& unit, const std::string& source) {
  if (!std::isfinite(scale) || scale <= 0) {
    cal.warn(source + ": the scan step is not a positive number: not used");
    return false;
  }
  if (const auto f = angstrom_per(unit)) {
    cal.offer("scan_step_angstrom", scale * *f, "angstrom", source);
    return true;
  }
  cal.warn(source + ": unit '" + unit + "' is not a length (A, nm, pm, um): no scan step");
  return false;
}

bool offer_detector_pixel(Calibration& cal, double scale, const std::string& unit, const std::string& source) {
  if (!std::isfinite(scale) || scale <= 0) {
    cal.warn(source + ": the detector pixel size is not a positive number: not used");
    return false;
  }
  if (unit == "mrad") {
    cal.offer("detector_mrad_per_pixel", scale, "mrad/px", source);
    return true;
  }
  if (const auto f = inv_angstrom_per(unit)) {
    const double per_a = scale * *f;
    cal.offer("detector_inv_angstrom_per_pixel", per_a, "1/angstrom/px", source);
    if (const CalibrationValue* e = cal.find("energy_kev"))
      cal.offer("detector_mrad_per_pixel", per_a * electron_wavelength_angstrom(e->value) * 1e3, "mrad/px",
                source + " x the electron wavelength at " + num_text(e->value) + " keV");
    return true;
  }
  cal.warn(source + ": unit '" + unit + "' is neither mrad nor 1/A, 1/nm: no detector calibration");
  return false;
}

std::optional<H5Layout> detect_layout(hid_t file, const std::string& path, const std::string& dataset_path) {
  (void)path;
  if (const auto t = string_attr(file, "emd_group_type", "HDF5 root"); t && *t == "file")
    return detect_emd(file, dataset_path);
  if (const auto f = string_attr(file, "file_format", "HDF5 root"); f && *f == "HyperSpy")
    return detect_hspy(file, dataset_path);
  return std::nullopt;
}

}  // namespace qgpu::io::emd
