#include "remote/cached.hpp"

#include <cstdio>

#include "remote/http_error.hpp"

namespace qgpu::remote {

void refuse_raw(const ServedDataset& s, const std::string& what) {
  throw HttpError(404, what + " needs the raw data: dataset '" + s.id + "' is served from the product cache '" +
                           s.path + "' (serve the source file for it)");
}

Image<std::uint64_t> cached_virtual(const cache::Cache& c, const VirtualRequest& v, double tolerance) {
  if (!(tolerance >= 0 && tolerance <= 0.5)) throw HttpError(400, "tolerance must be in [0, 0.5] pixels");
  const cache::Geometry& g = c.geometry();
  const double center[2] = {v.cr.value_or(g.disk_center_row), v.cc.value_or(g.disk_center_col)};
  std::string name;
  char what[160];
  if (v.kind == "bf" || v.kind == "disk") {
    const double r = v.r.value_or(g.disk_radius);
    name = c.find_disk(r, center, tolerance);
    std::snprintf(what, sizeof what, "%s of radius %g at (%g, %g)", v.kind.c_str(), r, center[0], center[1]);
  } else {
    name = c.find_annulus(*v.inner, *v.outer, center, tolerance);
    std::snprintf(what, sizeof what, "%s %g..%g at (%g, %g)", v.kind.c_str(), *v.inner, *v.outer, center[0],
                  center[1]);
  }
  if (name.empty()) {
    std::string held;
    for (const std::string& n : c.products()) {
      try {
        c.detector(n);
        held += " " + n;
      } catch (const cache::ProductUnavailable&) {
      }
    }
    throw cache::ProductUnavailable(std::string("virtual detector ") + what + " is not available in the cache '" +
                                    c.path() + "' (cached detectors:" + held + ")");
  }
  Image<std::uint64_t> img = c.u64(name);
  img.provenance.parameters["cache"]["name"] = name;
  img.provenance.parameters["cache"]["detector"] = c.detector(name);
  return img;
}

}  // namespace qgpu::remote
