#include "cli/image_from_cache.hpp"

#include <cstdio>
#include <filesystem>

#include "cache/cache.hpp"
#include "cli/outputs.hpp"
#include "detector/virtual_detector.hpp"
#include "display/pattern.hpp"
#include "dpc/pipeline.hpp"

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
  const std::filesystem::path& dir = r.dir;
  const nlohmann::json cal = c.geometry().calibration;  // the source's; the cached products are unbinned
  const ProductLook look = product_look(r.look, r.png, product_calibration(cal, "scan"));
  const ProductLook signed_look = product_look(r.signed_look, r.png, product_calibration(cal, "scan"), r.symmetric);
  const double* center = r.center.empty() ? nullptr : r.center.data();

  if (r.mean)  // as qgpu image: .npy holds the mean counts, the PNG shows the dark-field halo too
    write_outputs(dir, "mean_pattern", c.f32("mean_pattern"), product_look(display::pattern_display_options(r.colormap), r.png, product_calibration(cal, "detector")),
                  &display::pattern_log);
  if (r.want_bf) {
    const double radius = r.bf_radius ? *r.bf_radius : r.disk_radius ? *r.disk_radius : c.geometry().disk_radius;
    const std::string name = !r.bf_radius && !r.disk_radius && !center ? "bf" : c.find_disk(radius, center);
    if (name.empty()) {
      char buf[96];
      std::snprintf(buf, sizeof buf, "bright field of radius %g%s", radius, center ? " at the given centre" : "");
      throw cache::ProductUnavailable(std::string(buf) + " is not available in cache '" + r.file +
                                      "' (disks held:" + radii_held(c, "disk") + ")");
    }
    write_outputs(dir, "bf", c.u64(name), look);
  }
  if (r.want_adf) {
    std::string name = "adf";
    if (r.adf || center || r.disk_radius) {
      const cache::Geometry& g = c.geometry();
      std::optional<std::pair<double, double>> wanted = r.adf;
      if (!wanted && r.disk_radius) {  // the default radii of the given disk radius
        const detector::Center cc = center ? detector::Center{center[0], center[1]}
                                           : detector::Center{g.disk_center_row, g.disk_center_col};
        detector::DiskFit d;
        d.radius = *r.disk_radius;
        const detector::AnnulusRadii ar = detector::default_adf_radii(d, g.det_rows, g.det_cols, cc);
        wanted = std::pair<double, double>{ar.inner, ar.outer};
      }
      const auto radii = wanted ? *wanted : std::pair<double, double>{};
      if (wanted) {
        name = c.find_annulus(radii.first, radii.second, center);
      } else {  // the derived ADF at another centre: not cached
        const double cc[2] = {g.disk_center_row, g.disk_center_col};
        name = (center[0] == cc[0] && center[1] == cc[1]) ? "adf" : "";
      }
      if (name.empty()) {
        char buf[96];
        if (wanted)
          std::snprintf(buf, sizeof buf, "annulus %g..%g%s", radii.first, radii.second, center ? " at the given centre" : "");
        else
          std::snprintf(buf, sizeof buf, "the derived ADF at the given centre");
        throw cache::ProductUnavailable(std::string(buf) + " is not available in cache '" + r.file +
                                        "' (annuli held:" + radii_held(c, "annulus") + ")");
      }
    }
    write_outputs(dir, "adf", c.u64(name), look);
  }
  if (r.com) {
    write_outputs(dir, "com_row", c.f32("com_row"), look);
    write_outputs(dir, "com_col", c.f32("com_col"), look);
  }
  if (!r.dpc && !r.idpc) return;
  if (r.rotation.empty()) {
    const nlohmann::json rot = c.rotation();
    write_json(dir / "rotation.json", rot.at("provenance"));
    std::printf("  rotation       %.2f deg, transpose %s (from the cache)\n", rot.at("angle_deg").get<double>(),
                rot.at("transpose").get<bool>() ? "yes" : "no");
    if (r.dpc) {
      write_outputs(dir, "dpc_row", c.f32("field_row"), signed_look);
      write_outputs(dir, "dpc_col", c.f32("field_col"), signed_look);
    }
    if (r.idpc) write_outputs(dir, "idpc", c.f32("idpc"), look);
    return;
  }
  // Another rotation: corrected from the cached centred DPC (host data), integrated on the host.
  dpc::DpcResult d;
  d.dpc_row = c.f32("dpc_row");
  d.dpc_col = c.f32("dpc_col");
  d.provenance = d.dpc_row.provenance;
  dpc::PipelineParams pp;
  pp.rotation = dpc::Rotation{r.rotation[0], r.rotation.size() > 1 && r.rotation[1] != 0};
  pp.idpc = r.idpc;
  const dpc::PipelineResult res = dpc::run_pipeline(std::move(d), pp);
  if (r.dpc) {
    write_outputs(dir, "dpc_row", res.field_row, signed_look);
    write_outputs(dir, "dpc_col", res.field_col, signed_look);
  }
  if (r.idpc) write_outputs(dir, "idpc", *res.idpc, look);
}

}  // namespace qgpu::cli
