// GET /api/datasets/{id}/virtual (bf | adf | annulus | disk) and POST with an arbitrary mask.
#include "core/result_memory.hpp"
#include "detector/virtual_detector.hpp"
#include "remote/cached.hpp"
#include "remote/routes.hpp"
#include "remote/virtual_request.hpp"
#include "resident/scan_bin.hpp"

namespace qgpu::remote {

namespace {

const std::string kPath = R"(/api/datasets/([A-Za-z0-9_.-]+)/virtual)";

void get_virtual(Context& ctx, const httplib::Request& req, httplib::Response& res) {
  ServedDataset& s = ctx.catalog.get(req.matches[1]);
  const Params p(req.params);
  const VirtualRequest v = parse_virtual(p);
  const std::string format = p.choice("format", {"json", "u64", "png"}, "json");
  const display::DisplayOptions look = display_options(p, display::Scale::linear);
  const double tolerance = p.non_negative("tolerance").value_or(0);
  Timed t;
  Body body = run_timed(
      s,
      [&](ServedDataset& d) {
        if (d.cache) {
          Image<std::uint64_t> img = cached_virtual(*d.cache, v, tolerance);
          if (v.scan_bin > 1) {
            img.data = bin_scan_sums(std::move(img.data), img.rows, img.cols, v.scan_bin);
            img.rows /= v.scan_bin;
            img.cols /= v.scan_bin;
            img.provenance.output_shape = {img.rows, img.cols};
            img.provenance.parameters["scan_bin"] = v.scan_bin;
          }
          res.set_header("X-Cached-Product", img.provenance.parameters["cache"]["name"].get<std::string>());
          return sum_body(img, format, look);
        }
        SumImage img;
        {
          const timing::Stage stage("compute");  // the sums and their download
          img = compute_virtual(d.ds, v);
        }
        Body b = sum_body(img, format, look);
        recycle_result(std::move(img));  // its memory for the next answer of this size (core/result_memory.hpp)
        return b;
      },
      t);
  set_timing(res, t);
  send_body(res, std::move(body));
}

void post_virtual(Context& ctx, const httplib::Request& req, httplib::Response& res) {
  ServedDataset& s = ctx.catalog.get(req.matches[1]);
  if (s.cache) refuse_raw(s, "a virtual image of an arbitrary mask");
  const Params p(req.params);
  const std::string format = p.choice("format", {"json", "u64", "png"}, "json");
  const display::DisplayOptions look = display_options(p, display::Scale::linear);
  const std::size_t scan_bin = scan_bin_of(p);
  const Shape4D sh = s.dataset().shape();
  const detector::Mask mask =
      parse_mask_body(req.body, req.get_header_value("Content-Type"), sh.det_rows, sh.det_cols,
                      p.text("dtype").value_or(req.get_header_value("X-DType")));
  Timed t;
  Body body = run_timed(
      s,
      [&](ServedDataset& d) {
        SumImage img;
        {
          const timing::Stage stage("compute");  // the sums and their download
          img = detector::virtual_image(d.ds, mask, scan_bin);
        }
        Body b = sum_body(img, format, look);
        recycle_result(std::move(img));
        return b;
      },
      t);
  set_timing(res, t);
  send_body(res, std::move(body));
}

}  // namespace

void add_virtual_routes(httplib::Server& http, Context& ctx) {
  http.Get(kPath, guarded_heavy(ctx, [&ctx](const auto& q, auto& r) { get_virtual(ctx, q, r); }));
  http.Post(kPath, guarded_heavy(ctx, [&ctx](const auto& q, auto& r) { post_virtual(ctx, q, r); }));
}

}  // namespace qgpu::remote
