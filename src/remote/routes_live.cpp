// GET /api/datasets/{id}/live: the state of a live acquisition (qgpu serve --live): series, frames received of the
// scan, finished, the receiver's counters and the problems named.
#include "remote/http_error.hpp"
#include "remote/live_source.hpp"
#include "remote/routes.hpp"

namespace qgpu::remote {

namespace {

const LiveSource& live_of(const ServedDataset& s) {
  if (!s.live) throw HttpError(404, "dataset '" + s.id + "' is not a live acquisition");
  return *s.live;
}

}  // namespace

void add_live_routes(httplib::Server& http, Context& ctx) {
  const std::string path = R"(/api/datasets/([A-Za-z0-9_.-]+)/live)";
  http.Get(path, guarded([&ctx](const httplib::Request& req, httplib::Response& res) {
             send_json(res, live_of(ctx.catalog.get(req.matches[1])).status());
           }));
  // The positions received so far: scan_rows x scan_cols bytes, 1 = the frame is in (X-Shape rows,cols).
  http.Get(path + "/received", guarded([&ctx](const httplib::Request& req, httplib::Response& res) {
             const live::LiveProducts p = live_of(ctx.catalog.get(req.matches[1])).products();
             res.set_header("X-Shape", std::to_string(p.scan_rows) + "," + std::to_string(p.scan_cols));
             res.set_content(reinterpret_cast<const char*>(p.received.data()), p.received.size(),
                             "application/octet-stream");
           }));
}

}  // namespace qgpu::remote
