// cache::build: compute the products from one dataset and write the cache file (temporary file, then rename).
#include <chrono>
#include <ctime>
#include <filesystem>

#include "cache/cache.hpp"
#include "cache/cache_h5.hpp"
#include "cache/products.hpp"
#include "cache/source_identity.hpp"
#include "core/atomic_output.hpp"

namespace qgpu::cache {

namespace {

std::string utc_now() {
  const std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

nlohmann::json source_of(const workflow::ScanProducts& scan, const BuildOptions& o) {
  const nlohmann::json& md = scan.metadata();
  std::string path = o.source_path;
  std::vector<std::string> parts;
  if (md.contains("file") && md["file"].is_object()) {
    if (path.empty()) path = md["file"].value("path", "");
    if (md["file"].contains("parts"))
      for (const auto& p : md["file"]["parts"])
        if (p.contains("file")) parts.push_back(p["file"].get<std::string>());
  }
  if (path.empty()) return {{"files", nlohmann::json::array()}, {"note", "dataset not loaded from a file"}};
  nlohmann::json src = identify_sources(path, parts);
  if (md.contains("file") && md["file"].is_object()) src["dataset_path"] = md["file"].value("dataset_path", "");
  return src;
}

void write_attributes(hid_t obj, const nlohmann::json& attrs) {
  for (const auto& [k, v] : attrs.items()) {
    if (v.is_number())
      h5io::write_double(obj, k, v.get<double>());
    else if (v.is_string())
      h5io::write_string(obj, k, v.get<std::string>());
    else
      h5io::write_string(obj, k, v.dump());
  }
}

void write_product(hid_t file, const Product& p) {
  h5::Handle g = h5io::open_group(file, p.group, true);
  h5::Handle d = std::visit(
      [&](const auto& img) { return h5io::write_2d(g, p.name, img.rows, img.cols, img.data.data()); }, p.image);
  h5io::write_string(d, "provenance", p.provenance.dump());
  write_attributes(d, p.attributes);
}

void write_geometry(hid_t file, const Geometry& g) {
  h5::Handle grp = h5io::open_group(file, "geometry", true);
  h5io::write_double(grp, "disk_center_row", g.disk_center_row);
  h5io::write_double(grp, "disk_center_col", g.disk_center_col);
  h5io::write_double(grp, "disk_radius", g.disk_radius);
  h5io::write_u64s(grp, "scan_shape", {g.scan_rows, g.scan_cols});
  h5io::write_u64s(grp, "detector_shape", {g.det_rows, g.det_cols});
  h5io::write_string(grp, "calibration", g.calibration.dump());
  h5io::write_string(grp, "provenance", g.provenance.dump());
}

}  // namespace

std::vector<std::string> build(const Dataset& ds, const std::string& out_path, const BuildOptions& options) {
  workflow::DatasetProducts src(ds);
  return build(src, out_path, options);
}

std::vector<std::string> build(workflow::ScanProducts& src, const std::string& out_path, const BuildOptions& options) {
  check_extra_detectors(options);
  check_output_path(out_path, "cache output");  // a device node, FIFO or folder as -o fails first
  const nlohmann::json source = source_of(src, options);  // before the (long) computation: the file as loaded
  for (const auto& f : source["files"]) {  // never overwrite the raw data with its cache
    std::error_code ec;
    if (std::filesystem::equivalent(f.value("path", ""), out_path, ec))
      throw InvalidArgument("the cache '" + out_path + "' would overwrite its source file; choose another -o");
  }
  const ProductSet set = compute_products(src, options);
  // Written beside the target and renamed over it only when it is absent or a regular file (never over a
  // device node or FIFO); an error leaves the target as it was.
  AtomicOutput out(out_path, "cache output");
  std::vector<std::string> names;
  {
    h5::Handle file = h5io::create_file(out.temp_path());
    h5io::write_string(file, kMarkerAttribute, kMarker);
    h5io::write_int(file, "cache_format_version", kFormatVersion);
    h5io::write_string(file, "qgpu_version", kVersion);
    h5io::write_string(file, "created_utc", utc_now());
    h5io::write_string(file, "source", source.dump());
    nlohmann::json described = src.describe();
    h5io::write_string(file, "dataset", described.dump());
    h5io::write_string(file, "unavailable", nlohmann::json(set.unavailable).dump());
    nlohmann::json index = nlohmann::json::object();
    for (const Product& p : set.products) {
      if (index.contains(p.name)) throw InvalidArgument("two cache products named '" + p.name + "' (same radii given twice?)");
      index[p.name] = "/" + p.group + "/" + p.name;
      write_product(file, p);
      names.push_back(p.name);
    }
    h5io::write_string(file, "products", index.dump());
    write_geometry(file, set.geometry);
    if (H5Fflush(file, H5F_SCOPE_GLOBAL) < 0) throw IoError("cannot flush cache file '" + out.temp_path() + "'");
  }  // closed before the rename
  out.commit();
  return names;
}

}  // namespace qgpu::cache
