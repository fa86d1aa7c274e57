// GET /api/datasets, /api/datasets/{id}/{mean_pattern, max_pattern, disk_fit, frame, browse_plan, window}.
#include <algorithm>
#include <limits>
#include <type_traits>

#include "detector/virtual_detector.hpp"
#include "display/defaults.hpp"
#include "display/pattern.hpp"
#include "display/display.hpp"
#include "remote/cached.hpp"
#include "remote/encode.hpp"
#include "remote/frame_window.hpp"
#include "remote/routes.hpp"

namespace qgpu::remote {

namespace {

const std::string kId = R"(/api/datasets/([A-Za-z0-9_.-]+))";

void list(Context& ctx, httplib::Response& res) {
  nlohmann::json items = nlohmann::json::array();
  for (const auto& s : ctx.catalog.all()) items.push_back(describe_served(*s));
  // defaults: what the viewer starts with, shared with the service's PNGs (display/defaults.hpp).
  send_json(res, {{"datasets", items}, {"defaults", {{"colormap", display::kImageColormap}}}});
}

void mean_pattern(Context& ctx, const httplib::Request& req, httplib::Response& res) {
  ServedDataset& s = ctx.catalog.get(req.matches[1]);
  const Params p(req.params);
  const std::string format = p.choice("format", {"json", "f32", "png"}, "json");
  // A PNG without display parameters shows the dark-field halo too (display/pattern.hpp); any of scale, plo, phi,
  // vmin, vmax asks for the plain pipeline (log scale by default).
  const bool halo_view = format == "png" && !p.has("scale") && !p.has("plo") && !p.has("phi") && !p.has("vmin") &&
                         !p.has("vmax");
  const display::DisplayOptions look = halo_view
                                           ? display::pattern_display_options(p.text("colormap").value_or("inferno"))
                                           : display_options(p, display::Scale::log);
  double ms = 0;
  Body body = run_on(
      s,
      [&](ServedDataset& d) {
        const Image<float> mean = d.cache ? d.cache->f32("mean_pattern") : detector::mean_pattern(d.ds);
        return f32_body(halo_view ? display::pattern_log(mean) : mean, format, look);
      },
      ms);
  set_compute_ms(res, ms);
  send_body(res, std::move(body));
}

// Largest count of each detector pixel over the scan (detector::max_pattern on the dataset's backend), as float32.
Image<float> compute_max_pattern(const Dataset& ds) {
  Image<float> img = detector::max_pattern(ds).to_float();
  img.provenance.output_dtype = "float32";
  return img;
}

void max_pattern(Context& ctx, const httplib::Request& req, httplib::Response& res) {
  ServedDataset& s = ctx.catalog.get(req.matches[1]);
  if (s.cache) refuse_raw(s, "a max pattern");
  const Params p(req.params);
  const std::string format = p.choice("format", {"json", "f32", "png"}, "json");
  const display::DisplayOptions look = display_options(p, display::Scale::log);
  double ms = 0;
  Body body = run_on(
      s,
      [&](ServedDataset& d) {
        if (!d.max_cache) d.max_cache = std::make_shared<const Image<float>>(compute_max_pattern(d.ds));
        return f32_body(*d.max_cache, format, look);
      },
      ms);
  set_compute_ms(res, ms);
  send_body(res, std::move(body));
}

void disk_fit(Context& ctx, const httplib::Request& req, httplib::Response& res) {
  ServedDataset& s = ctx.catalog.get(req.matches[1]);
  double ms = 0;
  nlohmann::json fit_info;  // confidence, method, warning: the fit's, or a cache's record of it
  std::size_t det_rows = 0, det_cols = 0;
  const detector::DiskFit f = run_on(
      s,
      [&fit_info, &det_rows, &det_cols](ServedDataset& d) {
        if (!d.cache) {
          const detector::DiskFit fit = detector::fit_bf_disk(d.ds);
          fit_info = detector::fit_json(fit);
          det_rows = d.ds.shape().det_rows;
          det_cols = d.ds.shape().det_cols;
          return fit;
        }
        const cache::Geometry& g = d.cache->geometry();
        det_rows = g.det_rows;
        det_cols = g.det_cols;
        if (g.provenance.contains("bf_disk_fit")) fit_info = g.provenance.at("bf_disk_fit");
        detector::DiskFit fit;
        fit.center_row = g.disk_center_row;
        fit.center_col = g.disk_center_col;
        fit.radius = g.disk_radius;
        return fit;
      },
      ms);
  set_compute_ms(res, ms);
  nlohmann::json out = {{"center_row", f.center_row}, {"center_col", f.center_col}, {"radius", f.radius}};
  for (const char* k : {"confidence", "confident", "method", "warning", "other_edge_radius"})
    if (fit_info.contains(k)) out[k] = fit_info.at(k);
  // The default ADF ring of this fit (the CLI's, detector::default_adf_radii); absent when the disk leaves no ring.
  try {
    const detector::AnnulusRadii adf = detector::default_adf_radii(f, det_rows, det_cols);
    out["adf_inner"] = adf.inner;
    out["adf_outer"] = adf.outer;
  } catch (const InvalidArgument&) {
  }
  send_json(res, out);
}

void frame(Context& ctx, const httplib::Request& req, httplib::Response& res) {
  ServedDataset& s = ctx.catalog.get(req.matches[1]);
  if (s.cache) refuse_raw(s, "a diffraction frame");
  const Params p(req.params);
  const std::size_t row = p.required_index("row"), col = p.required_index("col");
  const std::string format = p.choice("format", {"raw", "json", "png"}, "raw");
  const display::DisplayOptions look = display_options(p, display::Scale::log);
  double ms = 0;
  Body body = run_on(
      s,
      [&](ServedDataset& d) {
        const Shape4D& sh = d.ds.shape();
        SumImage img = read_frame_values(d.ds, row, col);
        Body b;
        // raw: 32-bit values (uint32 counts, int32 signed data, float32 float data)
        const std::string raw_dtype = is_count_dtype(d.ds.dtype()) ? "uint32"
                                      : is_signed_dtype(d.ds.dtype()) ? "int32"
                                                                      : "float32";
        if (format == "raw") {
          img.visit([&](const auto& i) {
            using A = typename std::decay_t<decltype(i.data)>::value_type;
            using W = std::conditional_t<std::is_same_v<A, double>, float,
                                         std::conditional_t<std::is_same_v<A, std::int64_t>, std::int32_t, std::uint32_t>>;
            b.bytes = raw_bytes(std::vector<W>(i.data.begin(), i.data.end()));
          });
          b.dtype = raw_dtype;
          b.shape = {sh.det_rows, sh.det_cols};
          return b;
        }
        img.provenance().operation = "remote.frame";
        img.provenance().parameters = {{"row", row}, {"col", col}};
        b = sum_body(img, format, look);
        if (b.is_json) b.json["dtype"] = raw_dtype;
        return b;
      },
      ms);
  set_compute_ms(res, ms);
  send_body(res, std::move(body));
}

void plan(Context& ctx, const httplib::Request& req, httplib::Response& res) {
  const ServedDataset& s = ctx.catalog.get(req.matches[1]);
  if (s.cache) refuse_raw(s, "a browse plan");
  const Dataset ds = s.dataset();
  send_json(res, browse_plan(ds.shape(), dtype_name(ds.dtype()), ctx.options.window_limit_bytes));
}

void window(Context& ctx, const httplib::Request& req, httplib::Response& res) {
  ServedDataset& s = ctx.catalog.get(req.matches[1]);
  if (s.cache) refuse_raw(s, "a frame window");
  const Params p(req.params);
  const Shape4D sh = s.dataset().shape();
  const std::size_t row0 = p.index("row0").value_or(0), col0 = p.index("col0").value_or(0);
  const std::size_t rows = p.index("rows").value_or(sh.scan_rows > row0 ? sh.scan_rows - row0 : 0);
  const std::size_t cols = p.index("cols").value_or(sh.scan_cols > col0 ? sh.scan_cols - col0 : 0);
  const std::size_t bin = p.index("bin").value_or(1);
  if (rows == 0 || cols == 0) throw RegionError("scan window is empty or starts outside the scan");
  double ms = 0;
  FrameWindow w = run_on(
      s, [&](ServedDataset& d) { return read_window(d.ds, Region{row0, col0, rows, cols}, bin, ctx.options.window_limit_bytes); },
      ms);
  set_compute_ms(res, ms);
  send_raw(res, raw_bytes(w.counts), "uint32", w.shape.dims());
}

}  // namespace

void add_dataset_routes(httplib::Server& http, Context& ctx) {
  http.Get("/api/datasets", guarded([&ctx](const httplib::Request&, httplib::Response& res) { list(ctx, res); }));
  http.Get(kId + "/mean_pattern", guarded_heavy(ctx, [&ctx](const auto& q, auto& r) { mean_pattern(ctx, q, r); }));
  http.Get(kId + "/max_pattern", guarded_heavy(ctx, [&ctx](const auto& q, auto& r) { max_pattern(ctx, q, r); }));
  http.Get(kId + "/disk_fit", guarded_heavy(ctx, [&ctx](const auto& q, auto& r) { disk_fit(ctx, q, r); }));
  http.Get(kId + "/frame", guarded([&ctx](const auto& q, auto& r) { frame(ctx, q, r); }));
  http.Get(kId + "/browse_plan", guarded([&ctx](const auto& q, auto& r) { plan(ctx, q, r); }));
  http.Get(kId + "/window", guarded_heavy(ctx, [&ctx](const auto& q, auto& r) { window(ctx, q, r); }));
}

}  // namespace qgpu::remote
