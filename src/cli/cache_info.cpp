#include "cli/cache_info.hpp"

#include <cstdio>

#include "cache/cache.hpp"

namespace qgpu::cli {

void print_cache_info(const std::string& path, bool json) {
  const cache::Cache c = cache::open(path);
  if (json) {
    nlohmann::json j = c.root_attributes();
    j["products"] = c.products();
    j["stale"] = c.stale();
    j["source_present"] = c.source_present();
    std::printf("%s\n", j.dump(2).c_str());
    return;
  }
  std::printf("cache       %s (product cache, format %d, qgpu %s, created %s)\n", path.c_str(), c.format_version(),
              c.root_attributes().value("qgpu_version", "?").c_str(),
              c.root_attributes().value("created_utc", "?").c_str());
  std::printf("source      %s (%s)\n", c.source().value("path", std::string("none recorded")).c_str(),
              !c.source_present() ? "absent" : c.stale().empty() ? "unchanged" : "CHANGED: the cache is stale");
  for (const std::string& change : c.stale()) std::printf("  changed   %s\n", change.c_str());
  {
    try {
      const cache::Geometry& g = c.geometry();
      std::printf("shape       scan %zu x %zu, detector %zu x %zu\n", g.scan_rows, g.scan_cols, g.det_rows, g.det_cols);
      std::printf("disk        centre (%.3f, %.3f), radius %.3f\n", g.disk_center_row, g.disk_center_col,
                  g.disk_radius);
    } catch (const cache::ProductUnavailable& e) {
      std::printf("geometry    unavailable (%s)\n", e.what());
    }
  }
  for (const std::string& n : c.products()) {
    std::string what = c.dtype(n);
    try {
      const nlohmann::json d = c.detector(n);
      char buf[96];
      if (d.value("kind", "") == "disk")
        std::snprintf(buf, sizeof buf, ", disk r %.3f", d.value("radius", 0.0));
      else
        std::snprintf(buf, sizeof buf, ", annulus %.3f..%.3f", d.value("inner", 0.0), d.value("outer", 0.0));
      what += buf;
    } catch (const cache::ProductUnavailable&) {
    }
    std::printf("product     %-14s %s\n", n.c_str(), what.c_str());
  }
  if (c.root_attributes().contains("unavailable"))
    for (const auto& [n, why] : c.root_attributes()["unavailable"].items())
      std::printf("not made    %-14s %s\n", n.c_str(), why.is_string() ? why.get<std::string>().c_str() : why.dump().c_str());
}

}  // namespace qgpu::cli
