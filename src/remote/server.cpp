#include "remote/server.hpp"

#include <httplib.h>

#include <algorithm>
#include <charconv>
#include <csignal>
#include <cstdio>
#include <filesystem>

#include "core/error.hpp"
#include "remote/host_address.hpp"
#include "remote/http_error.hpp"
#include "remote/virtual_request.hpp"
#include "remote/routes.hpp"

namespace qgpu::remote {

namespace {

// Constant-time comparison of the presented and expected token.
bool same_token(const std::string& a, const std::string& b) {
  if (a.size() != b.size() || b.empty()) return false;
  unsigned char diff = 0;
  for (std::size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

std::string cookie_token(const httplib::Request& req) {
  const std::string cookies = req.get_header_value("Cookie");
  const std::string key = "qgpu_token=";
  for (std::size_t pos = cookies.find(key); pos != std::string::npos; pos = cookies.find(key, pos + 1))
    if (pos == 0 || cookies[pos - 1] == ' ' || cookies[pos - 1] == ';') {
      const std::size_t start = pos + key.size(), end = cookies.find(';', start);
      return cookies.substr(start, end == std::string::npos ? std::string::npos : end - start);
    }
  return "";
}

// The request line for the log, without the token.
std::string logged_target(const httplib::Request& req) {
  std::string q;
  for (const auto& [k, v] : req.params)
    if (k != "token") {
      q += q.empty() ? '?' : '&';
      q += k + "=" + v;
    }
  return req.path + q;
}

// A path with control characters (a decoded %00 truncates the file name the static handler opens) or a
// backslash is refused before routing.
bool hostile_path(const std::string& path) {
  for (const char ch : path)
    if (static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f || ch == '\\') return true;
  return false;
}

// The longest request body any route takes: the largest mask of the served detectors (at least 64 KiB).
std::size_t max_body_bytes(const Catalog& catalog) {
  std::size_t most = std::size_t(64) << 10;
  for (const auto& s : catalog.all()) {
    if (s->cache) continue;  // no POSTed masks for a cache
    const Shape4D sh = s->dataset().shape();
    most = std::max(most, mask_body_limit(sh.det_rows, sh.det_cols));
  }
  return most;
}

}  // namespace

std::string default_web_dir() {
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const auto beside = exe.parent_path() / "web";
    if (std::filesystem::exists(beside / "index.html", ec)) return beside.string();
  }
#ifdef QGPU_WEB_DIR
  return QGPU_WEB_DIR;
#else
  return "";
#endif
}

struct Server::Impl {
  Catalog catalog;
  ServeOptions options;
  httplib::Server http;
  HeavySlots heavy;
  Context ctx{catalog, options, heavy};
  std::size_t body_limit = 0;
  std::string bind_address;  // the numeric address checked in the constructor
  HostRule host_rule;

  Impl(Catalog c, ServeOptions o)
      : catalog(std::move(c)),
        options(std::move(o)),
        heavy(options.max_heavy_requests, std::chrono::milliseconds(options.heavy_wait_ms)),
        host_rule(!options.token.empty(), options.host, options.allowed_hosts) {}

  // Without a token: a Host that is not a loopback or allowed name (DNS rebinding) is 421, an Origin of
  // another site 403, before anything else is looked at.
  bool refuse_host(const httplib::Request& req, httplib::Response& res) const {
    const std::optional<HostRule::Refusal> r =
        host_rule.check(req.get_header_value("Host"), req.get_header_value("Origin"));
    if (!r) return false;
    send_error(res, r->status, r->message);
    res.set_header("Connection", "close");
    return true;
  }

  // Refuses hostile paths and bodies longer than any route takes, before the body is read.
  bool refuse_early(const httplib::Request& req, httplib::Response& res) {
    if (hostile_path(req.path)) {
      send_error(res, 400, "request path holds a control character or backslash");
      return true;
    }
    const std::string length = req.get_header_value("Content-Length");
    if (!length.empty()) {
      std::size_t n = 0;
      const auto [p, ec] = std::from_chars(length.data(), length.data() + length.size(), n);
      if (ec != std::errc() || p != length.data() + length.size() || n > body_limit) {
        send_error(res, 413, "request body of " + length + " bytes exceeds " + std::to_string(body_limit) +
                                 " bytes, the most any route of this server takes");
        res.set_header("Connection", "close");
        return true;
      }
    }
    return false;
  }

  httplib::Server::HandlerResponse authorize(const httplib::Request& req, httplib::Response& res) {
    if (options.token.empty()) return httplib::Server::HandlerResponse::Unhandled;
    const std::string bearer = "Bearer " + options.token;
    const bool by_query = req.has_param("token") && same_token(req.get_param_value("token"), options.token);
    if (same_token(req.get_header_value("Authorization"), bearer) || by_query ||
        same_token(cookie_token(req), options.token)) {
      // Lets the browser load the viewer's scripts and call the API after opening /?token=T.
      if (by_query) res.set_header("Set-Cookie", "qgpu_token=" + options.token + "; HttpOnly; SameSite=Strict; Path=/");
      return httplib::Server::HandlerResponse::Unhandled;
    }
    send_error(res, 401, "missing or wrong token: send 'Authorization: Bearer TOKEN' or '?token=TOKEN'");
    res.set_header("WWW-Authenticate", "Bearer");
    return httplib::Server::HandlerResponse::Handled;
  }

  void log(const httplib::Request& req, const httplib::Response& res) const {
    if (!options.log_requests) return;
    const std::string ms = res.get_header_value("X-Compute-Ms");
    std::fprintf(stderr, "qgpu serve: %s %s %s -> %d, %zu bytes%s%s\n", req.remote_addr.c_str(), req.method.c_str(),
                 logged_target(req).c_str(), res.status, res.body.size(), ms.empty() ? "" : ", compute ms ",
                 ms.c_str());
  }

  void setup() {
    // Each connection holds a thread while it sends its request: enough threads that a handful of slow clients
    // cannot starve the rest, and a short read timeout so that an idle or trickling one lets go soon.
    const int threads = std::max(4, options.threads);
    http.new_task_queue = [threads] { return new httplib::ThreadPool(std::size_t(threads)); };
    http.set_keep_alive_max_count(100);
    http.set_keep_alive_timeout(2);
    http.set_read_timeout(2, 0);
    http.set_write_timeout(30, 0);
    body_limit = max_body_bytes(catalog);
    http.set_payload_max_length(body_limit);
    http.set_pre_routing_handler([this](const auto& req, auto& res) {
      if (refuse_host(req, res) || refuse_early(req, res)) return httplib::Server::HandlerResponse::Handled;
      return authorize(req, res);
    });
    http.set_logger([this](const auto& req, const auto& res) { log(req, res); });
    http.set_exception_handler([](const auto&, auto& res, std::exception_ptr e) {
      const StatusAndMessage m = classify(e);
      send_error(res, m.status, m.message);
    });
    http.set_error_handler(httplib::Server::HandlerWithResponse([](const httplib::Request& req, httplib::Response& res) {
      if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
      send_error(res, res.status, res.status == 404 ? "no route for " + req.method + " " + req.path
                                                    : "HTTP error " + std::to_string(res.status));
      return httplib::Server::HandlerResponse::Handled;
    }));
    http.set_default_headers({{"Cache-Control", "no-store"}});
    add_dataset_routes(http, ctx);
    add_virtual_routes(http, ctx);
    add_dpc_routes(http, ctx);
    add_ssb_routes(http, ctx);
    add_live_routes(http, ctx);
    if (options.web_dir.empty()) options.web_dir = default_web_dir();
    http.set_file_extension_and_mimetype_mapping("js", "text/javascript");
    http.set_file_extension_and_mimetype_mapping("wgsl", "text/plain");
    const bool mounted = !options.web_dir.empty() && std::filesystem::exists(options.web_dir + "/index.html") &&
                         http.set_mount_point("/", options.web_dir);
    if (!mounted) {
      const std::string dir = options.web_dir;
      http.Get("/", guarded([dir](const httplib::Request&, httplib::Response&) {
        throw HttpError(404, "the viewer is not built (no index.html in '" + dir +
                                 "'): run 'npm ci && npm run build' in src/remote/web, or pass --web DIR");
      }));
    }
  }
};

Server::Server(Catalog catalog, ServeOptions options) {
  const std::vector<std::string> addresses = resolve_host(options.host);
  bool loopback = !addresses.empty();
  for (const std::string& a : addresses) loopback = loopback && is_loopback_address(a);
  if (!loopback && options.token.empty())
    throw InvalidArgument("binding to the non-loopback host '" + options.host +
                          "' requires --token (requests then carry 'Authorization: Bearer TOKEN')");
  if (options.port < 0 || options.port > 65535) throw InvalidArgument("port must be in 0..65535");
  // A client that goes away mid-response must not kill the process with SIGPIPE.
  std::signal(SIGPIPE, SIG_IGN);
  impl_ = std::make_unique<Impl>(std::move(catalog), std::move(options));
  impl_->bind_address = addresses.empty() ? "" : addresses.front();
  impl_->setup();
}

Server::~Server() { stop(); }

int Server::bind() {
  // Binds the address checked in the constructor, not a second resolution of the name.
  const std::string host = impl_->bind_address;
  if (host.empty()) throw IoError("cannot resolve host '" + impl_->options.host + "'");
  if (impl_->options.port == 0) {
    const int port = impl_->http.bind_to_any_port(host);
    if (port <= 0) throw IoError("cannot bind to " + host + " on any port");
    impl_->options.port = port;
    return port;
  }
  if (!impl_->http.bind_to_port(host, impl_->options.port))
    throw IoError("cannot bind to " + host + ":" + std::to_string(impl_->options.port) +
                  " (in use? try --port 0 for a free port)");
  return impl_->options.port;
}

void Server::listen() { impl_->http.listen_after_bind(); }

void Server::stop() {
  if (impl_ && impl_->http.is_running()) impl_->http.stop();
}

const Catalog& Server::catalog() const { return impl_->catalog; }
const std::string& Server::web_dir() const { return impl_->options.web_dir; }

}  // namespace qgpu::remote
