// GET /api/datasets/{id}/com, /dpc, /idpc: float32 maps (json, f32 raw, or png of one component).
// dpc and idpc use the calibrated rotation unless rotation=DEG (and transpose=0|1) is given.
#include <cstring>
#include <optional>

#include "core/result_memory.hpp"
#include "dpc/com.hpp"
#include "dpc/idpc.hpp"
#include "dpc/pipeline.hpp"
#include "dpc/rotation.hpp"
#include "remote/cached.hpp"
#include "remote/encode.hpp"
#include "remote/http_error.hpp"
#include "remote/routes.hpp"
#include "remote/virtual_request.hpp"

namespace qgpu::remote {

namespace {

const std::string kId = R"(/api/datasets/([A-Za-z0-9_.-]+))";

const dpc::ComResult& com_of(ServedDataset& s) {  // called with s.work held
  if (!s.com_cache) s.com_cache = std::make_shared<const dpc::ComResult>(dpc::center_of_mass(s.ds));
  return *s.com_cache;
}

// The calibrated rotation of the dataset's centred DPC (default reference), computed once: the CoM curl minimum, or
// the parallax shift field when that is not determined (dpc::calibrate_rotation(ds, dpc)).
const dpc::RotationResult& rotation_of(ServedDataset& s, const dpc::DpcResult& d) {  // called with s.work held
  if (!s.rotation_cache) s.rotation_cache = std::make_shared<const dpc::RotationResult>(dpc::calibrate_rotation(s.ds, d));
  return *s.rotation_cache;
}

using Field = RotatedField;

// The centred DPC of the cached CoM, computed once.
const dpc::DpcResult& dpc_of(ServedDataset& s) {  // called with s.work held
  if (!s.dpc_cache) s.dpc_cache = std::make_shared<const dpc::DpcResult>(dpc::centered_dpc(com_of(s)));
  return *s.dpc_cache;
}

// The rotation a request gives (rotation=DEG, transpose=0|1), or none: calibrated.
std::optional<dpc::Rotation> given_rotation(const Params& p) {
  const auto a = p.number("rotation");
  if (!a) return std::nullopt;
  return dpc::Rotation{*a, p.choice("transpose", {"0", "1"}, "0") == "1"};
}

Field field_of(dpc::PipelineResult&& r, nlohmann::json info) {
  Field f{std::move(r.field_row), std::move(r.field_col), std::move(info)};
  f.info["angle_deg"] = r.rotation.angle_deg;
  f.info["transpose"] = r.rotation.transpose;
  return f;
}

// From a product cache: the cached calibrated field, or the cached centred DPC rotated as asked (dpc::run_pipeline).
Field cached_rotated_dpc(const cache::Cache& c, const Params& p) {
  if (const auto given = given_rotation(p)) {
    dpc::DpcResult d;
    d.dpc_row = c.f32("dpc_row");
    d.dpc_col = c.f32("dpc_col");
    d.provenance = d.dpc_row.provenance;  // host data
    dpc::PipelineParams pp;
    pp.rotation = given;
    return field_of(dpc::run_pipeline(std::move(d), pp), {{"rotation", "given"}});
  }
  const nlohmann::json rot = c.rotation();
  Field f;
  f.row = c.f32("field_row");
  f.col = c.f32("field_col");
  f.info = {{"rotation", "calibrated"}, {"curl_rms", rot.at("curl_rms")}, {"angle_deg", rot.at("angle_deg")},
            {"transpose", rot.at("transpose")}, {"from", "product cache"}};
  return f;
}

// The DPC pipeline (dpc::run_pipeline) from the dataset's centred DPC, with its rotation given or calibrated once;
// the calibrated field is kept (ServedDataset::field_cache), a given rotation is applied each time.
std::shared_ptr<const Field> rotated_dpc(ServedDataset& s, const Params& p) {
  if (s.cache) return std::make_shared<const Field>(cached_rotated_dpc(*s.cache, p));
  const std::optional<dpc::Rotation> given = given_rotation(p);
  if (s.field_cache && !given) return s.field_cache;
  const timing::Stage stage("host");
  if (given) {  // the cached centred DPC rotated as asked: no copy of the DPC, the field moved into the answer
    auto [row, col] = dpc::rotate_field(dpc_of(s), given->angle_deg, given->transpose);
    return std::make_shared<const Field>(Field{std::move(row), std::move(col),
                                               {{"rotation", "given"}, {"angle_deg", given->angle_deg},
                                                {"transpose", given->transpose}}});
  }
  dpc::PipelineParams pp;
  dpc::PipelineResult r =
      dpc::run_pipeline(dpc_of(s), pp, [&s](const dpc::DpcResult& d) { return rotation_of(s, d); });
  nlohmann::json info;
  {
    const dpc::RotationResult& rot = *r.calibration;
    info["rotation"] = "calibrated";
    info["method"] = rot.method;
    info["curl_rms"] = rot.curl_rms;
    info["confidence"] = rot.confidence;
    info["determined"] = rot.determined;
    info["warning"] = dpc::rotation_warning(rot);
  }
  s.field_cache = std::make_shared<const Field>(field_of(std::move(r), std::move(info)));
  return s.field_cache;
}

// The DPC field of the binned scan (scan_bin b): the CoM of b x b blocks (dpc::ComOptions::scan_bin), centred,
// rotated as given, else by the full-resolution calibration when it exists, else by one of this field (kept per b).
std::shared_ptr<const Field> binned_dpc(ServedDataset& s, const Params& p, std::size_t b) {
  if (s.cache) refuse_raw(s, "a scan-binned DPC");
  const std::optional<dpc::Rotation> given = given_rotation(p);
  if (!given)
    if (const auto it = s.binned_field_cache.find(b); it != s.binned_field_cache.end()) return it->second;
  dpc::ComOptions o;
  o.scan_bin = b;
  dpc::ComResult com;
  {
    const timing::Stage stage("compute");
    com = dpc::center_of_mass(s.ds, o);
  }
  const timing::Stage stage("host");
  dpc::PipelineParams pp;
  pp.rotation = given;
  dpc::PipelineResult r = dpc::run_pipeline(std::move(com), pp, [&s](const dpc::DpcResult& d) {
    return s.rotation_cache ? *s.rotation_cache : dpc::calibrate_rotation(d);
  });
  nlohmann::json info = {{"scan_bin", b}};
  if (given) {
    info["rotation"] = "given";
  } else {
    info["rotation"] = "calibrated";
    info["from"] = s.rotation_cache ? "the full-resolution field" : "this binned field";
    info["warning"] = dpc::rotation_warning(*r.calibration);
  }
  auto f = std::make_shared<const Field>(field_of(std::move(r), std::move(info)));
  if (!given) s.binned_field_cache[b] = f;
  return f;
}

// Two components: json {row, col}, f32 stacked [2][rows][cols], png of `component`.
Body pair_body(const Field& f, const Params& p) {
  const std::string format = p.choice("format", {"json", "f32", "png"}, "json");
  if (format == "png") {
    const bool col = p.choice("component", {"row", "col"}, "row") == "col";
    return f32_body(col ? f.col : f.row, "png", display_options(p, display::Scale::linear));
  }
  const timing::Stage stage("encode");
  Body body;
  if (format == "json") {
    body.is_json = true;
    body.json = {{"row", image_json(f.row)}, {"col", image_json(f.col)}, {"info", f.info}};
    return body;
  }
  const std::size_t half = f.row.data.size() * sizeof(float);  // one allocation, two copies
  body.bytes.resize(half + f.col.data.size() * sizeof(float));
  if (half) std::memcpy(body.bytes.data(), f.row.data.data(), half);
  if (!f.col.data.empty()) std::memcpy(body.bytes.data() + half, f.col.data.data(), body.bytes.size() - half);
  body.dtype = "float32";
  body.shape = {2, f.row.rows, f.row.cols};
  return body;
}

dpc::IdpcPadding padding_of(const Params& p) {
  const std::string s = p.choice("padding", {"mirror", "zeros", "periodic"}, "mirror");
  return s == "zeros" ? dpc::IdpcPadding::zeros : s == "periodic" ? dpc::IdpcPadding::periodic : dpc::IdpcPadding::mirror;
}

template <class F> void respond(Context& ctx, const httplib::Request& req, httplib::Response& res, F make) {
  ServedDataset& s = ctx.catalog.get(req.matches[1]);
  const Params p(req.params);
  Timed t;
  Body body = run_timed(s, [&](ServedDataset& d) { return make(d, p); }, t);
  set_timing(res, t);
  send_body(res, std::move(body));
}

}  // namespace

void add_dpc_routes(httplib::Server& http, Context& ctx) {
  http.Get(kId + "/com", guarded_heavy(ctx, [&ctx](const auto& q, auto& r) {
             respond(ctx, q, r, [](ServedDataset& d, const Params& p) {
               const std::size_t bin = scan_bin_of(p);
               if (d.cache) {
                 if (bin > 1) refuse_raw(d, "a scan-binned CoM");
                 Field f{d.cache->f32("com_row"), d.cache->f32("com_col"), {{"from", "product cache"}}};
                 return pair_body(f, p);
               }
               if (bin > 1) {  // the CoM of b x b blocks of positions (ComOptions::scan_bin), computed per request
                 dpc::ComOptions o;
                 o.scan_bin = bin;
                 dpc::ComResult c;
                 {
                   const timing::Stage stage("compute");
                   c = dpc::center_of_mass(d.ds, o);
                 }
                 Field f{std::move(c.com_row), std::move(c.com_col), {{"empty_frames", c.empty_frames}, {"scan_bin", bin}}};
                 return pair_body(f, p);
               }
               const dpc::ComResult& c = com_of(d);
               Field f{c.com_row, c.com_col, {{"empty_frames", c.empty_frames}}};
               return pair_body(f, p);
             });
           }));
  http.Get(kId + "/dpc", guarded_heavy(ctx, [&ctx](const auto& q, auto& r) {
             respond(ctx, q, r, [](ServedDataset& d, const Params& p) {
               const std::size_t bin = scan_bin_of(p);
               return pair_body(bin > 1 ? *binned_dpc(d, p, bin) : *rotated_dpc(d, p), p);
             });
           }));
  http.Get(kId + "/idpc", guarded_heavy(ctx, [&ctx](const auto& q, auto& r) {
             respond(ctx, q, r, [](ServedDataset& d, const Params& p) {
               const std::string format = p.choice("format", {"json", "f32", "png"}, "json");
               const dpc::IdpcPadding padding = padding_of(p);
               const display::DisplayOptions look = display_options(p, display::Scale::linear);
               const std::size_t bin = scan_bin_of(p);
               if (d.cache && bin == 1 && !p.number("rotation") && padding == dpc::IdpcPadding::mirror)
                 return f32_body(d.cache->f32("idpc"), format, look);
               dpc::IdpcOptions o;
               o.padding = padding;
               Image<float> phi;
               const std::optional<dpc::Rotation> given = given_rotation(p);
               if (given && bin == 1 && !d.cache) {  // the held centred DPC, rotated as asked as it is integrated
                 o.rotation_deg = given->angle_deg;
                 o.transpose = given->transpose;
                 const dpc::DpcResult& dpc = dpc_of(d);
                 phi = dpc::idpc(dpc.dpc_row, dpc.dpc_col, o);
               } else {  // the pipeline's field (kept when calibrated), integrated as dpc::run_pipeline's last step does
                 const auto f = bin > 1 ? binned_dpc(d, p, bin) : rotated_dpc(d, p);
                 phi = dpc::idpc(f->row, f->col, o);
               }
               Body body = f32_body(phi, format, look);
               recycle_result(std::move(phi));  // its memory for the next iDPC of this size (core/result_memory.hpp)
               return body;
             });
           }));
}

}  // namespace qgpu::remote
