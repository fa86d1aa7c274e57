#pragma once
// `qgpu serve`: an HTTP service over loaded datasets (JSON API + the WebGPU viewer's static files).
// Loopback by default; any other host needs a bearer token. Without a token only loopback Host names (and
// --allow-host ones) are answered. See routes_*.cpp for the endpoints.
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "remote/catalog.hpp"
#include "remote/frame_window.hpp"

namespace qgpu::remote {

struct ServeOptions {
  std::string host = "127.0.0.1";
  int port = 8321;           // 0: an ephemeral port (see Server::bind)
  std::string token;         // required for a non-loopback host
  // Without a token: the Host names answered besides loopback ones and `host` (--allow-host; HostRule in
  // host_address.hpp). Other Host headers are 421, other Origins 403. With a token any Host is answered.
  std::vector<std::string> allowed_hosts;
  std::string web_dir;       // built viewer; "" = default_web_dir()
  std::size_t window_limit_bytes = kDefaultWindowLimitBytes;
  bool log_requests = true;  // one line per request on stderr
  std::size_t max_heavy_requests = 4;  // computations / mask bodies / windows at once; more wait, then 503
                                       // (qgpu serve --devices raises it to 4 per device: heavy_slots_for)
  int heavy_wait_ms = 2000;            // how long a heavy request waits for a slot
  int threads = 64;                    // connection threads (a slow client holds one until its read timeout)
};

// True when the host resolves and every address it names is loopback (127.0.0.0/8, ::1): the address is
// parsed (names resolved), not matched as text, so "127.0.0.1.example.com" is loopback only if it resolves so.
bool is_loopback_host(const std::string& host);

// Heavy-request slots for datasets on `devices` GPUs: `base` per device (at least `base`), so that datasets on
// different GPUs compute concurrently rather than queueing behind one device's share.
inline std::size_t heavy_slots_for(std::size_t devices, std::size_t base = 4) {
  return base * (devices > 1 ? devices : 1);
}

// <directory of the running executable>/web when it holds index.html, else the build output folder of
// src/remote/web (compile definition QGPU_WEB_DIR).
std::string default_web_dir();

class Server {
 public:
  // InvalidArgument when the host is not loopback and no token is given, or an allowed host is not a name.
  Server(Catalog catalog, ServeOptions options);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Binds host:port and returns the port (the chosen one for port 0). IoError when binding fails.
  int bind();
  // Serves until stop() (call bind() first).
  void listen();
  void stop();

  const Catalog& catalog() const;
  const std::string& web_dir() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace qgpu::remote
