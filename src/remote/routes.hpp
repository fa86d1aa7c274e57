#pragma once
// Internal to the remote domain: what route handlers share (the catalog, options, response helpers).
#include <httplib.h>

#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/image.hpp"
#include "core/stage_timing.hpp"
#include "display/options.hpp"
#include "remote/catalog.hpp"
#include "remote/heavy_slots.hpp"
#include "remote/params.hpp"
#include "remote/server.hpp"

namespace qgpu::remote {

struct Context {
  Catalog& catalog;
  const ServeOptions& options;
  HeavySlots& heavy;  // concurrent heavy requests (options.max_heavy_requests)
};

using RouteHandler = std::function<void(const httplib::Request&, httplib::Response&)>;

// Wraps a handler: exceptions become JSON errors with their status (http_error.hpp).
httplib::Server::Handler guarded(RouteHandler handler);
// guarded, holding one of ctx.heavy's slots while it runs; 503 with Retry-After when none comes free in time.
httplib::Server::Handler guarded_heavy(Context& ctx, RouteHandler handler);

void send_json(httplib::Response& res, const nlohmann::json& body, int status = 200);
void send_error(httplib::Response& res, int status, const std::string& message);
// Raw little-endian bytes with X-DType and X-Shape ("rows,cols" or more dims).
void send_raw(httplib::Response& res, std::string bytes, const std::string& dtype,
              const std::vector<std::size_t>& shape);
void send_png(httplib::Response& res, std::string bytes);
void set_compute_ms(httplib::Response& res, double ms);

// Server-side time of a request: run_on's milliseconds (X-Compute-Ms) and the stages the work recorded meanwhile
// (core/stage_timing.hpp: compute, transfer, host, render, encode, ...).
struct Timed {
  double ms = 0;
  std::vector<std::pair<std::string, double>> stages;
};
// run_on (catalog.hpp) with the stages recorded.
template <class F> auto run_timed(ServedDataset& s, F&& f, Timed& t) {
  timing::Recording recording;
  auto result = run_on(s, std::forward<F>(f), t.ms);
  t.stages = recording.stages();
  return result;
}
// X-Compute-Ms and Server-Timing ("compute;dur=1.234, ..., other;dur=..., total;dur=<X-Compute-Ms>").
void set_timing(httplib::Response& res, const Timed& t);

// colormap, scale, plo / phi (percentiles), vmin / vmax; `scale` defaults to `default_scale`.
display::DisplayOptions display_options(const Params& p, display::Scale default_scale);

// The body of an image in the requested format: json, the raw dtype (u64 / f32) or png.
struct Body {
  std::string bytes, content_type, dtype;
  std::vector<std::size_t> shape;
  nlohmann::json json;
  bool is_json = false;
};
void send_body(httplib::Response& res, Body body);
// PNG bodies are rendered where the image's provenance says it lives (the one dispatch rule, device.hpp).
// Sums (uint64 counts, int64 signed data, float64 float data): format "u64" sends the raw sums in their dtype (X-DType).
Body sum_body(const SumImage& img, const std::string& format, const display::DisplayOptions& look);
Body f32_body(const Image<float>& img, const std::string& format, const display::DisplayOptions& look);

void add_dataset_routes(httplib::Server& http, Context& ctx);  // list, mean_pattern, disk_fit, frame, browse_plan, window
void add_virtual_routes(httplib::Server& http, Context& ctx);  // GET / POST virtual
void add_dpc_routes(httplib::Server& http, Context& ctx);      // com, dpc, idpc
void add_ssb_routes(httplib::Server& http, Context& ctx);      // ssb, ssb_fit
void add_live_routes(httplib::Server& http, Context& ctx);     // live (status of a live acquisition)

}  // namespace qgpu::remote
