// GET /api/datasets/{id}/ssb (phase or amplitude of an SSB reconstruction at a given defocus) and /ssb_fit
// (the defocus fit). Parameters come from the file's calibration with `defocus` (angstrom) replacing C1
// (ssb::resolve_params, as the CLI and Python resolve theirs); `bin` (default 4) is the detector binning of the
// preview (1: the full reconstruction). The service keeps G(K, Q) of the last bin asked (ssb::Reconstructor in
// ServedDataset::ssb_cache), so a new defocus costs only the aberration-dependent part: the viewer's live defocus
// slider. Bin 1 (G of every BF pixel) is kept only on a GPU, whose engine holds what fits in its device memory
// budget and streams the rest (ssb/cuda/ssb_cuda.cu); on the cpu backend its complex128 G (13.5 GB for 512x512
// scans and 3200 BF pixels) is rebuilt on each request.
#include <algorithm>
#include <cmath>

#include "remote/cached.hpp"
#include "remote/encode.hpp"
#include "remote/http_error.hpp"
#include "remote/routes.hpp"
#include "remote/virtual_request.hpp"
#include "ssb/params.hpp"
#include "ssb/ssb.hpp"

namespace qgpu::remote {

namespace {

const std::string kId = R"(/api/datasets/([A-Za-z0-9_.-]+))";
constexpr std::size_t kMaxBin = 64;
constexpr std::size_t kMaxTrials = 2000;

std::size_t bin_of(const Params& p) {
  const std::size_t bin = p.index("bin").value_or(4);
  if (bin < 1 || bin > kMaxBin)
    throw HttpError(400, "parameter 'bin' must be in 1.." + std::to_string(kMaxBin) + ", got " + std::to_string(bin));
  return bin;
}

double defocus_bound(const Params& p, const std::string& name, double fallback) {
  const double v = p.number(name).value_or(fallback);
  if (std::abs(v) > ssb::kMaxAbsC1)
    throw HttpError(400, "parameter '" + name + "' must be within +-" + std::to_string(int(ssb::kMaxAbsC1)) + " angstrom");
  return v;
}

// The query parameter that overrides each SSB parameter.
std::string parameter_of(const std::string& key) {
  return "parameter '" + std::string(key == "C1" ? "defocus" : key) + "'";
}

void ssb_image(Context& ctx, const httplib::Request& req, httplib::Response& res) {
  ServedDataset& s = ctx.catalog.get(req.matches[1]);
  if (s.cache) refuse_raw(s, "an SSB reconstruction");
  const Params p(req.params);
  const std::string format = p.choice("format", {"json", "f32", "png"}, "json");
  const bool amplitude = p.choice("component", {"phase", "amplitude"}, "phase") == "amplitude";
  const std::size_t bin = bin_of(p);
  const std::size_t scan_bin = scan_bin_of(p);
  const display::DisplayOptions look = display_options(p, display::Scale::linear);
  Timed t;
  Body body = run_timed(
      s,
      [&](ServedDataset& d) {
        ssb::ParamOverrides o;
        o.C1 = p.number("defocus");
        const ssb::SsbParams sp = ssb::resolve_params(d.ds.metadata(), o, parameter_of);
        ssb::SsbResult r;
        if (bin == 1 && d.ds.backend() == Backend::cpu) {  // G(K, Q) of every BF pixel in host memory: not kept
          r = scan_bin == 1 ? ssb::reconstruct(d.ds, sp) : ssb::Reconstructor(d.ds, sp, 1).at(sp.aberrations, scan_bin);
        } else {
          ssb::Reconstructor* kept = d.ssb_cache.get();
          if (!kept || kept->detector_bin() != bin) {
            d.ssb_cache.reset();  // frees the previous G before the next is built
            d.ssb_cache = std::make_shared<ssb::Reconstructor>(d.ds, sp, bin);
            kept = d.ssb_cache.get();
          }
          r = kept->at(sp.aberrations, scan_bin);  // scan_bin > 1: the low-pass answer on the binned grid
        }
        return f32_body(amplitude ? r.amplitude : r.phase, format, look);
      },
      t);
  set_timing(res, t);
  send_body(res, std::move(body));
}

void ssb_fit(Context& ctx, const httplib::Request& req, httplib::Response& res) {
  ServedDataset& s = ctx.catalog.get(req.matches[1]);
  if (s.cache) refuse_raw(s, "an SSB defocus fit");
  const Params p(req.params);
  ssb::FitOptions o;
  o.trials = p.index("trials").value_or(60);
  if (o.trials < 4 || o.trials > kMaxTrials)
    throw HttpError(400, "parameter 'trials' must be in 4.." + std::to_string(kMaxTrials));
  o.c1_min = defocus_bound(p, "c1_min", -500);
  o.c1_max = defocus_bound(p, "c1_max", 500);
  if (!(o.c1_min < o.c1_max)) throw HttpError(400, "parameters 'c1_min' < 'c1_max' are required");
  o.detector_bin = bin_of(p);
  double ms = 0;
  const ssb::FitResult f = run_on(
      s, [&](ServedDataset& d) { return ssb::fit(d.ds, ssb::params_from_metadata(d.ds), o); }, ms);
  set_compute_ms(res, ms);
  send_json(res, {{"defocus_angstrom", f.aberrations.C1},
                  {"loss", f.loss},
                  {"trials", f.loss_trace.size()},
                  {"c1_range", {o.c1_min, o.c1_max}},
                  {"detector_bin", o.detector_bin}});
}

}  // namespace

void add_ssb_routes(httplib::Server& http, Context& ctx) {
  http.Get(kId + "/ssb", guarded_heavy(ctx, [&ctx](const auto& q, auto& r) { ssb_image(ctx, q, r); }));
  http.Get(kId + "/ssb_fit", guarded_heavy(ctx, [&ctx](const auto& q, auto& r) { ssb_fit(ctx, q, r); }));
}

}  // namespace qgpu::remote
