// Response helpers shared by the route handlers.
#include <cstdio>
#include <type_traits>

#include "display/defaults.hpp"
#include "display/display.hpp"
#include "remote/encode.hpp"
#include "remote/http_error.hpp"
#include "remote/routes.hpp"

namespace qgpu::remote {

httplib::Server::Handler guarded(RouteHandler handler) {
  return [handler = std::move(handler)](const httplib::Request& req, httplib::Response& res) {
    try {
      handler(req, res);
    } catch (...) {
      const StatusAndMessage e = classify(std::current_exception());
      res.headers.erase("X-Shape");
      res.headers.erase("X-DType");
      send_error(res, e.status, e.message);
    }
  };
}

httplib::Server::Handler guarded_heavy(Context& ctx, RouteHandler handler) {
  return [&ctx, inner = guarded(std::move(handler))](const httplib::Request& req, httplib::Response& res) {
    const HeavySlots::Slot slot(ctx.heavy);
    if (!slot.taken()) {
      res.set_header("Retry-After", "1");
      send_error(res, 503,
                 "busy: " + std::to_string(ctx.options.max_heavy_requests) +
                     " heavy requests are running; retry after 1 s");
      return;
    }
    inner(req, res);
  };
}

void send_json(httplib::Response& res, const nlohmann::json& body, int status) {
  res.status = status;
  res.set_content(body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), "application/json");
}

void send_error(httplib::Response& res, int status, const std::string& message) {
  send_json(res, {{"error", message}, {"status", status}}, status);
}

void send_raw(httplib::Response& res, std::string bytes, const std::string& dtype,
              const std::vector<std::size_t>& shape) {
  std::string s;
  for (std::size_t d : shape) {
    if (!s.empty()) s += ',';
    s += std::to_string(d);
  }
  res.status = 200;
  res.set_header("X-DType", dtype);
  res.set_header("X-Shape", s);
  res.set_header("Access-Control-Expose-Headers", "X-DType, X-Shape, X-Compute-Ms, Server-Timing");
  res.body = std::move(bytes);  // no copy of large windows
  res.set_header("Content-Type", "application/octet-stream");
}

void send_png(httplib::Response& res, std::string bytes) {
  res.status = 200;
  res.body = std::move(bytes);
  res.set_header("Content-Type", "image/png");
}

void set_compute_ms(httplib::Response& res, double ms) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", ms);
  res.set_header("X-Compute-Ms", buf);
}

void set_timing(httplib::Response& res, const Timed& t) {
  set_compute_ms(res, t.ms);
  res.set_header("Server-Timing", timing::server_timing(t.stages, t.ms));
}

display::DisplayOptions display_options(const Params& p, display::Scale default_scale) {
  display::DisplayOptions o;
  o.colormap = p.text("colormap").value_or(display::kImageColormap);
  const auto scale = p.text("scale");
  try {
    o.scale = scale ? display::scale_from_name(*scale) : default_scale;
  } catch (const InvalidArgument& e) {
    throw HttpError(400, std::string("parameter 'scale': ") + e.what());
  }
  o.lower_percentile = p.number("plo").value_or(0.0);
  o.upper_percentile = p.number("phi").value_or(100.0);
  o.vmin = p.number("vmin");
  o.vmax = p.number("vmax");
  display::validate(o);  // InvalidArgument (unknown colormap, bad percentiles) -> 400
  return o;
}

void send_body(httplib::Response& res, Body body) {
  if (body.is_json)
    send_json(res, body.json);
  else if (body.content_type == "image/png")
    send_png(res, std::move(body.bytes));
  else
    send_raw(res, std::move(body.bytes), body.dtype, body.shape);
}

namespace {

// Rendered where the image's provenance says it lives (the dataset's backend).
// As colormap indices, a palette PNG of the map's colours (one byte a pixel from the device, no colour lookup);
// a picture with transparent (non-finite) pixels is rendered in colour instead.
template <class T> Body png_body(const Image<T>& img, const display::DisplayOptions& look) {
  Image<float> values;
  display::Indexed indexed;
  {
    const timing::Stage stage("render");  // (the values as float, then their colormap indices)
    if constexpr (std::is_same_v<T, std::uint64_t>) {
      indexed = display::render_indexed(img, look);  // counts: converted where they are rendered
    } else {
      values = as_float(img);
      indexed = display::render_indexed(values, look);
    }
  }
  Body b;
  b.content_type = "image/png";
  if (indexed.transparent == 0) {
    const timing::Stage stage("encode");
    b.bytes = png_bytes(indexed, display::colormap(look.colormap));
    return b;
  }
  display::Rgba rgba;
  {
    const timing::Stage stage("render");
    if (values.data.empty()) values = as_float(img);
    rgba = display::render(values, look);
  }
  const timing::Stage stage("encode");
  b.bytes = png_bytes(rgba);
  return b;
}

// Raw little-endian values with shape and dtype headers, JSON, or a rendered PNG.
template <class T>
Body image_body(const Image<T>& img, const std::string& format, const display::DisplayOptions& look,
                const std::string& dtype) {
  if (format == "png") return png_body(img, look);
  const timing::Stage stage("encode");
  Body b;
  if (format == "json") {
    b.is_json = true;
    b.json = image_json(img);
    return b;
  }
  b.bytes = raw_bytes(img.data);
  b.dtype = dtype;
  b.shape = {img.rows, img.cols};
  return b;
}

}  // namespace

Body sum_body(const SumImage& img, const std::string& format, const display::DisplayOptions& look) {
  return img.visit([&](const auto& i) {
    return image_body(i, format, look, dtype_name(dtype_of<typename std::decay_t<decltype(i.data)>::value_type>::value));
  });
}

Body f32_body(const Image<float>& img, const std::string& format, const display::DisplayOptions& look) {
  return image_body(img, format, look, "float32");
}

}  // namespace qgpu::remote
