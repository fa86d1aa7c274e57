#include "cli/image_from_cache.hpp"

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "cache/cache.hpp"
#include "cli/outputs.hpp"
#include "dpc/idpc.hpp"
#include "dpc/rotation.hpp"

namespace qgpu::cli {

namespace {

std::string radii_held(const cache::Cache& c, const char* kind) {
  std::string s;
  for (const std::string& n : c.products()) {
    nlohmann::json d;
    try {
      d = c.detector(n);
    } catch (const cache::ProductUnavailable&) {
      continue;
    }
    if (d.value("kind", "") != kind) continue;
    char buf[128];
    if (d["kind"] == "disk")
      std::snprintf(buf, sizeof buf, " %s (r %g)", n.c_str(), d.value("radius", 0.0));
    else
      std::snprintf(buf, sizeof buf, " %s (%g..%g)", n.c_str(), d.value("inner", 0.0), d.value("outer", 0.0));
    s += buf;
  }
  return s.empty() ? " none" : s;
}

}  // namespace

void image_from_cache(const CacheImageRequest& r) {
  if (!r.load_only_option.empty())
    throw InvalidArgument(r.load_only_option + " needs the raw data: '" + r.file +
                          "' is a product cache (run qgpu image on the source file)");
  const cache::Cache c = cache::open(r.file);
  for (const std::string& change : c.stale())
    std::fprintf(stderr, "qgpu: warning: cache '%s' is stale: %s\n", r.file.c_str(), change.c_str());
  std::printf("cache %s (format %d): %zu products\n", r.file.c_str(), c.format_version(), c.products().size());
  const Backend b = r.backend == "cuda" ? Backend::cuda : Backend::cpu;  // display only: small images
  const std::filesystem::path dir(r.out);
  std::filesystem::create_directories(dir);
  display::DisplayOptions look;
  look.colormap = r.colormap;
  look.scale = display::scale_from_name(r.scale);
  look.lower_percentile = r.percentiles[0];
  look.upper_percentile = r.percentiles[1];
  const double* center = r.center.empty() ? nullptr : r.center.data();

  if (r.mean) {
    display::DisplayOptions log_look = look;
    log_look.scale = display::Scale::log;
    write_outputs(dir, "mean_pattern", c.f32("mean_pattern"), log_look, b);
  }
  if (r.want_bf) {
    std::string name = r.bf.empty() && !center ? "bf" : c.find_disk(r.bf.empty() ? c.geometry().disk_radius : r.bf[0], center);
    if (name.empty()) {
      char buf[96];
      std::snprintf(buf, sizeof buf, "bright field of radius %g%s", r.bf.empty() ? c.geometry().disk_radius : r.bf[0],
                    center ? " at the given centre" : "");
      throw cache::ProductUnavailable(std::string(buf) + " is not available in cache '" + r.file +
                                      "' (disks held:" + radii_held(c, "disk") + ")");
    }
    write_outputs(dir, "bf", c.u64(name), look, b);
  }
  if (r.want_adf) {
    const std::string name = c.find_annulus(r.adf[0], r.adf[1], center);
    if (name.empty()) {
      char buf[96];
      std::snprintf(buf, sizeof buf, "annulus %g..%g%s", r.adf[0], r.adf[1], center ? " at the given centre" : "");
      throw cache::ProductUnavailable(std::string(buf) + " is not available in cache '" + r.file +
                                      "' (annuli held:" + radii_held(c, "annulus") + ")");
    }
    write_outputs(dir, "adf", c.u64(name), look, b);
  }
  if (r.com) {
    write_outputs(dir, "com_row", c.f32("com_row"), look, b);
    write_outputs(dir, "com_col", c.f32("com_col"), look, b);
  }
  if (!r.dpc && !r.idpc) return;
  if (r.rotation.empty()) {
    const nlohmann::json rot = c.rotation();
    std::ofstream((dir / "rotation.json").string()) << rot.at("provenance").dump(2) << "\n";
    std::printf("  rotation       %.2f deg, transpose %s (from the cache)\n", rot.at("angle_deg").get<double>(),
                rot.at("transpose").get<bool>() ? "yes" : "no");
    if (r.dpc) {
      write_outputs(dir, "dpc_row", c.f32("field_row"), look, b);
      write_outputs(dir, "dpc_col", c.f32("field_col"), look, b);
    }
    if (r.idpc) write_outputs(dir, "idpc", c.f32("idpc"), look, b);
    return;
  }
  // Another rotation: corrected from the cached centred DPC, integrated on the host.
  dpc::DpcResult d;
  d.dpc_row = c.f32("dpc_row");
  d.dpc_col = c.f32("dpc_col");
  d.provenance.operation = "dpc.centered_dpc";
  d.provenance.backend = "cache";
  auto [gr, gc] = dpc::rotate_field(d, r.rotation[0], r.rotation.size() > 1 && r.rotation[1] != 0);
  if (r.dpc) {
    write_outputs(dir, "dpc_row", gr, look, b);
    write_outputs(dir, "dpc_col", gc, look, b);
  }
  if (r.idpc) write_outputs(dir, "idpc", dpc::idpc(gr, gc, b), look, b);
}

}  // namespace qgpu::cli
