#include <pybind11/stl.h>

#include "cache/cache.hpp"
#include "convert.hpp"

namespace qgpu::py {

void bind_cache(pyb::module_& m) {
  const pyb::object error = m.attr("Error");
  pyb::register_exception<cache::ProductUnavailable>(m, "ProductUnavailable", error.ptr());
  pyb::register_exception<cache::StaleCache>(m, "StaleCache", error.ptr());
  m.attr("cache_format_version") = cache::kFormatVersion;

  m.def("cache_build", [](const Dataset& ds, const PathArg& path, const std::vector<double>& bf_radii,
                          const std::vector<std::pair<double, double>>& adf) {
    cache::BuildOptions o;
    o.bf_radii = bf_radii;
    for (const auto& [inner, outer] : adf) o.adf_ranges.push_back({inner, outer});
    pyb::gil_scoped_release release;
    return cache::build(ds, path.string(), o);
  }, pyb::arg("ds"), pyb::arg("path"), pyb::arg("bf_radii") = std::vector<double>{},
     pyb::arg("adf") = std::vector<std::pair<double, double>>{});
  m.def("is_cache_file", [](const PathArg& path) { return cache::is_cache_file(path.string()); }, pyb::arg("path"));

  pyb::class_<cache::Cache>(m, "CacheFile", "A product cache opened with cache_open (products read eagerly)")
      .def_property_readonly("path", &cache::Cache::path)
      .def_property_readonly("format_version", &cache::Cache::format_version)
      .def_property_readonly("products", &cache::Cache::products)
      .def("has", &cache::Cache::has)
      .def("dtype", &cache::Cache::dtype)
      .def("get", [](const cache::Cache& c, const std::string& name) -> pyb::tuple {
        const std::string dt = c.dtype(name);
        if (dt == "uint64") return image_to_python(c.u64(name));
        if (dt == "float32") return image_to_python(c.f32(name));
        return image_to_python(c.f64(name));  // float64: the rotation's curl scan
      }, pyb::arg("name"))
      .def("provenance", [](const cache::Cache& c, const std::string& n) { return to_python(c.provenance(n)); })
      .def("detector", [](const cache::Cache& c, const std::string& n) { return to_python(c.detector(n)); })
      .def("rotation", [](const cache::Cache& c) { return to_python(c.rotation()); })
      .def("geometry", [](const cache::Cache& c) {
        const cache::Geometry& g = c.geometry();
        pyb::dict d;
        d["disk_center"] = pyb::make_tuple(g.disk_center_row, g.disk_center_col);
        d["disk_radius"] = g.disk_radius;
        d["scan_shape"] = pyb::make_tuple(g.scan_rows, g.scan_cols);
        d["detector_shape"] = pyb::make_tuple(g.det_rows, g.det_cols);
        d["calibration"] = to_python(g.calibration);
        d["provenance"] = to_python(g.provenance);
        return d;
      })
      .def_property_readonly("source", [](const cache::Cache& c) { return to_python(c.source()); })
      .def_property_readonly("attributes", [](const cache::Cache& c) { return to_python(c.root_attributes()); })
      .def_property_readonly("source_present", &cache::Cache::source_present)
      .def_property_readonly("stale", &cache::Cache::stale);
  m.def("cache_open", [](const PathArg& path, bool require_fresh) {
    return cache::open(path.string(), {.require_fresh = require_fresh});
  }, pyb::arg("path"), pyb::arg("require_fresh") = false);
}

}  // namespace qgpu::py
