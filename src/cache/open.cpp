// cache::open: reads a product cache (every product, eagerly: they are small) and checks the source's identity.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <variant>

#include "cache/cache.hpp"
#include "cache/cache_h5.hpp"
#include "cache/source_identity.hpp"
#include "io/hdf5/isolated_parse.hpp"

namespace qgpu::cache {

struct Cache::State {
  struct Entry {
    std::string path, dtype;
    std::variant<Image<std::uint64_t>, Image<float>, Image<double>> image;
    nlohmann::json provenance, attributes = nlohmann::json::object();
  };
  std::string path;
  int version = 0;
  std::map<std::string, Entry> entries;
  std::map<std::string, std::string> unavailable;
  bool has_geometry = false;
  Geometry geometry;
  nlohmann::json source = nlohmann::json::object(), root = nlohmann::json::object();
  bool source_present = false;
  std::vector<std::string> stale;

  const Entry& entry(const std::string& name) const {
    auto it = entries.find(name);
    if (it != entries.end()) return it->second;
    std::string msg = "product '" + name + "' is not available in cache '" + path + "'";
    auto why = unavailable.find(name);
    if (why != unavailable.end()) {
      msg += " (not made when it was built: " + why->second + ")";
    } else {
      msg += " (it holds:";
      for (const auto& [n, e] : entries) msg += " " + n;
      msg += ")";
    }
    throw ProductUnavailable(msg);
  }
};

namespace {

nlohmann::json parse_or_string(const std::string& s) {
  auto j = nlohmann::json::parse(s, nullptr, false);
  return j.is_discarded() ? nlohmann::json(s) : j;
}

nlohmann::json read_attributes(hid_t obj, const std::string& where) {
  nlohmann::json out = nlohmann::json::object();
  for (const std::string& n : h5io::attribute_names(obj)) {
    h5::Handle a(H5Aopen(obj, n.c_str(), H5P_DEFAULT), H5Aclose);
    h5::Handle type(H5Aget_type(a), H5Tclose);
    h5::Handle space(H5Aget_space(a), H5Sclose);
    const bool scalar = H5Sget_simple_extent_npoints(space) == 1;
    switch (H5Tget_class(type)) {
      case H5T_STRING: out[n] = parse_or_string(h5io::read_string(obj, n, where)); break;
      case H5T_FLOAT: if (scalar) out[n] = h5io::read_double(obj, n, where); break;
      case H5T_INTEGER:
        if (scalar) out[n] = h5io::read_int(obj, n, where);
        else out[n] = h5io::read_u64s(obj, n, where);
        break;
      default: break;
    }
  }
  return out;
}

herr_t collect(hid_t, const char* name, const H5L_info_t*, void* data) {
  static_cast<std::vector<std::string>*>(data)->push_back(name);
  return 0;
}

bool near(double a, double b, double tolerance) {
  return std::abs(a - b) <= std::max(tolerance, 1e-9 * std::max(1.0, std::abs(b)));
}

bool center_matches(const nlohmann::json& det, const double* center, double tolerance) {
  if (!center) return true;
  return det.contains("center") && near(det["center"][0].get<double>(), center[0], tolerance) &&
         near(det["center"][1].get<double>(), center[1], tolerance);
}

}  // namespace

Cache open(const std::string& path, const OpenOptions& options) {
  auto st = std::make_shared<Cache::State>();
  st->path = path;
  h5::Handle file = h5::open_file(path);
  if (!h5io::has_attribute(file, kMarkerAttribute) ||
      h5io::read_string(file, kMarkerAttribute, "'" + path + "'") != kMarker)
    throw FormatError("'" + path + "' is not a quantem-gpu product cache (no root attribute " + kMarkerAttribute + ")");
  const std::string root_where = "cache '" + path + "'";
  const std::int64_t version = h5io::read_int(file, "cache_format_version", root_where);
  if (version < 1 || version > kFormatVersion)
    throw FormatError(root_where + " has cache_format_version " + std::to_string(version) + "; this qgpu reads 1.." +
                      std::to_string(kFormatVersion));
  st->version = static_cast<int>(version);
  st->root = read_attributes(file, root_where);
  if (st->root.contains("source") && st->root["source"].is_object()) st->source = st->root["source"];
  if (st->root.contains("unavailable") && st->root["unavailable"].is_object())
    for (const auto& [k, v] : st->root["unavailable"].items()) st->unavailable[k] = v.is_string() ? v.get<std::string>() : v.dump();

  for (const char* group : {"patterns", "scan", "virtual", "dpc"}) {
    h5::Handle g = h5io::open_group(file, group, false);
    if (!g.valid()) continue;
    std::vector<std::string> names;
    H5Literate(g, H5_INDEX_NAME, H5_ITER_INC, nullptr, collect, &names);
    for (const std::string& n : names) {
      h5::QuietErrors quiet;
      h5::Handle d(H5Dopen2(g, n.c_str(), H5P_DEFAULT), H5Dclose);
      if (!d.valid()) continue;
      Cache::State::Entry e;
      e.path = std::string("/") + group + "/" + n;
      e.dtype = h5io::dtype_of(d);
      if (e.dtype == "uint64") e.image = h5io::read_2d<std::uint64_t>(d, n);
      else if (e.dtype == "float32") e.image = h5io::read_2d<float>(d, n);
      else if (e.dtype == "float64") e.image = h5io::read_2d<double>(d, n);
      else throw FormatError(root_where + ": product " + e.path + " has an unexpected dtype");
      e.attributes = read_attributes(d, e.path);
      if (e.attributes.contains("provenance")) {
        e.provenance = e.attributes["provenance"];
        e.attributes.erase("provenance");
      }
      if (st->entries.count(n)) throw FormatError(root_where + " holds two products named '" + n + "'");
      st->entries[n] = std::move(e);
    }
  }

  if (h5::Handle g = h5io::open_group(file, "geometry", false); g.valid()) {
    const std::string where = root_where + " /geometry";
    Geometry& geo = st->geometry;
    geo.disk_center_row = h5io::read_double(g, "disk_center_row", where);
    geo.disk_center_col = h5io::read_double(g, "disk_center_col", where);
    geo.disk_radius = h5io::read_double(g, "disk_radius", where);
    const auto scan = h5io::read_u64s(g, "scan_shape", where), det = h5io::read_u64s(g, "detector_shape", where);
    if (scan.size() != 2 || det.size() != 2) throw FormatError(where + ": scan_shape/detector_shape must have 2 values");
    geo.scan_rows = scan[0];
    geo.scan_cols = scan[1];
    geo.det_rows = det[0];
    geo.det_cols = det[1];
    if (h5io::has_attribute(g, "calibration"))
      geo.calibration = parse_or_string(h5io::read_string(g, "calibration", where));
    if (h5io::has_attribute(g, "provenance"))
      geo.provenance = parse_or_string(h5io::read_string(g, "provenance", where));
    st->has_geometry = true;
  }

  st->stale = compare_sources(st->source, st->source_present);
  if (options.require_fresh && !st->stale.empty()) {
    std::string msg = root_where + " is stale:";
    for (const std::string& c : st->stale) msg += " " + c + ";";
    throw StaleCache(msg);
  }
  return Cache(std::move(st));
}

bool is_cache_file(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return false;
  h5::QuietErrors quiet;
  if (H5Fis_hdf5(path.c_str()) <= 0) return false;
  try {
    // Opened in the isolation child first: a file HDF5 fails to open (a damaged superblock) is then never opened
    // by HDF5 in this process, which would keep state of the failed open and loop closing the library at exit
    // ("infinite loop closing library", issue 25).
    io::validate_in_child(path, "open", [&] { h5::open_file(path); });
    h5::Handle file = h5::open_file(path);
    return h5io::has_attribute(file, kMarkerAttribute);
  } catch (const Error&) {
    return false;
  }
}

const std::string& Cache::path() const { return s_->path; }
int Cache::format_version() const { return s_->version; }
std::vector<std::string> Cache::products() const {
  std::vector<std::string> n;
  for (const auto& [k, v] : s_->entries) n.push_back(k);
  return n;
}
bool Cache::has(const std::string& name) const { return s_->entries.count(name) > 0; }
std::string Cache::dtype(const std::string& name) const { return s_->entry(name).dtype; }

template <class T> static Image<T> image_of(const Cache::State& s, const std::string& name, const char* want) {
  const auto& e = s.entry(name);
  const Image<T>* img = std::get_if<Image<T>>(&e.image);
  if (!img) throw DTypeError("cache product '" + name + "' is " + e.dtype + ", not " + want);
  Image<T> out = *img;
  // The recorded provenance, as a typed Provenance (fields that are absent stay empty).
  const nlohmann::json& p = e.provenance;
  if (p.is_object()) {
    // A field of another type than ours (a hand-edited or foreign file) stays empty: the whole record is still
    // there in Cache::provenance; a float or negative shape value is never converted (that would be undefined).
    const auto text = [&](const char* k) {
      const auto it = p.find(k);
      return it != p.end() && it->is_string() ? it->get<std::string>() : std::string();
    };
    const auto shape = [&](const char* k) {
      std::vector<std::size_t> v;
      const auto it = p.find(k);
      if (it == p.end() || !it->is_array()) return v;
      for (const auto& x : *it) {
        if (!x.is_number_unsigned()) return std::vector<std::size_t>();
        v.push_back(std::size_t(x.get<std::uint64_t>()));
      }
      return v;
    };
    out.provenance.operation = text("operation");
    out.provenance.backend = text("backend");
    out.provenance.input_dtype = text("input_dtype");
    out.provenance.output_dtype = text("output_dtype");
    out.provenance.representation = text("representation");
    out.provenance.input_shape = shape("input_shape");
    out.provenance.output_shape = shape("output_shape");
    if (p.contains("parameters") && p["parameters"].is_object()) out.provenance.parameters = p["parameters"];
    out.provenance.version = text("version");
  }
  // Read from a file into host memory: later operations on it run on the cpu (one dispatch rule, device.hpp).
  out.provenance.parameters["cache"] = {{"path", s.path}, {"product", e.path}, {"computed_on", out.provenance.backend}};
  out.provenance.backend = backend_name(Backend::cpu);
  return out;
}

Image<std::uint64_t> Cache::u64(const std::string& name) const { return image_of<std::uint64_t>(*s_, name, "uint64"); }
Image<float> Cache::f32(const std::string& name) const { return image_of<float>(*s_, name, "float32"); }
Image<double> Cache::f64(const std::string& name) const { return image_of<double>(*s_, name, "float64"); }
nlohmann::json Cache::provenance(const std::string& name) const { return s_->entry(name).provenance; }
nlohmann::json Cache::detector(const std::string& name) const {
  const auto& e = s_->entry(name);
  if (!e.attributes.contains("detector"))
    throw ProductUnavailable("cache product '" + name + "' is not a virtual detector (no detector geometry)");
  return e.attributes.at("detector");
}

std::string Cache::find_disk(double radius, const double* center, double tol) const {
  for (const auto& [n, e] : s_->entries) {
    if (!e.attributes.contains("detector")) continue;
    const auto& d = e.attributes.at("detector");
    if (d.value("kind", "") == "disk" && near(d.value("radius", -1.0), radius, tol) && center_matches(d, center, tol))
      return n;
  }
  return "";
}

std::string Cache::find_annulus(double inner, double outer, const double* center, double tol) const {
  for (const auto& [n, e] : s_->entries) {
    if (!e.attributes.contains("detector")) continue;
    const auto& d = e.attributes.at("detector");
    if (d.value("kind", "") == "annulus" && near(d.value("inner", -1.0), inner, tol) &&
        near(d.value("outer", -1.0), outer, tol) && center_matches(d, center, tol))
      return n;
  }
  return "";
}

const Geometry& Cache::geometry() const {
  if (!s_->has_geometry) throw ProductUnavailable("cache '" + s_->path + "' holds no geometry (/geometry)");
  return s_->geometry;
}

nlohmann::json Cache::rotation() const {
  const auto& e = s_->entry("rotation");
  nlohmann::json r = {{"provenance", e.provenance}};
  for (const char* k : {"angle_deg", "transpose", "curl_rms", "divergence_rms"}) {
    if (!e.attributes.contains(k))
      throw FormatError("cache '" + s_->path + "': rotation lacks the attribute '" + k + "'");
    r[k] = e.attributes.at(k);
  }
  r["transpose"] = r["transpose"].get<double>() != 0;
  return r;
}

const nlohmann::json& Cache::source() const { return s_->source; }
const nlohmann::json& Cache::root_attributes() const { return s_->root; }
bool Cache::source_present() const { return s_->source_present; }
const std::vector<std::string>& Cache::stale() const { return s_->stale; }

}  // namespace qgpu::cache
