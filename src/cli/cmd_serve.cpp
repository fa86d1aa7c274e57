// qgpu serve FILE...: HTTP service + WebGPU viewer over loaded datasets (see src/remote/server.hpp).
#include <cstdio>
#include <filesystem>
#include <optional>

#include "cli/checks.hpp"
#include "cli/commands.hpp"
#include "cli/load_flags.hpp"
#include "core/error.hpp"
#include "remote/host_address.hpp"
#include "remote/live_source.hpp"
#include "remote/server.hpp"

namespace qgpu::cli {

void add_serve(CLI::App& app) {
  auto* cmd = app.add_subcommand("serve", "Serve datasets over HTTP (JSON API + browser viewer)");
  struct Args {
    std::vector<std::string> files;
    std::vector<int> devices;
    remote::ServeOptions serve;
    std::string backend = "auto", dataset;
    LoadFlags load;
    std::size_t window_limit_mib = remote::kDefaultWindowLimitBytes >> 20;
    std::string live;
    double live_wait = 0;
  };
  auto a = std::make_shared<Args>();
  cmd->option_defaults()->always_capture_default();  // --help shows every default
  cmd->add_option("files", a->files, "4D-STEM files (any format qgpu loads) or product caches");
  cmd->add_option("--live", a->live,
                  "also serve a detector's stream as dataset 'live', filling while it runs: dectris://HOST[:PORT], "
                  "dectris-v1://HOST[:PORT] or merlin://HOST[:PORT] (--scan-shape ROWS COLS when the stream has none)");
  cmd->add_option("--live-wait", a->live_wait, "seconds to wait for the stream's first series (0: no limit)");
  cmd->add_option("--port", a->serve.port, "TCP port (0: any free port)");
  cmd->add_option("--host", a->serve.host, "address to bind (non-loopback needs --token)");
  cmd->add_option("--devices", a->devices, "CUDA devices, datasets placed round-robin (e.g. 0,1)")->delimiter(',');
  add_source_flags(cmd, a->backend, a->dataset, a->load);
  cmd->add_option("--token", a->serve.token, "bearer token required on every request");
  cmd->add_option("--allow-host", a->serve.allowed_hosts,
                  "without --token: a Host name answered besides localhost/127.0.0.1/[::1] (repeatable)")
      ->allow_extra_args(false);
  cmd->add_option("--web", a->serve.web_dir, "folder of the built viewer (default: src/remote/web/dist)");
  cmd->add_option("--window-limit-mib", a->window_limit_mib, "largest frame window answered, MiB (default 256)")
      ->check(CLI::Range(std::size_t(1), std::size_t(1) << 20));
  cmd->callback([a] {
    a->serve.window_limit_bytes = a->window_limit_mib << 20;
    a->serve.max_heavy_requests = remote::heavy_slots_for(a->devices.size(), a->serve.max_heavy_requests);
    if (!remote::is_loopback_host(a->serve.host) && a->serve.token.empty())  // fail before loading anything
      throw InvalidArgument("binding to the non-loopback host '" + a->serve.host + "' requires --token");
    (void)remote::HostRule(!a->serve.token.empty(), a->serve.host, a->serve.allowed_hosts);  // bad --allow-host
    check_backend_name(a->backend);
    if (a->files.empty() && a->live.empty()) throw InvalidArgument("qgpu serve: give files to serve, or --live SOURCE");
    // A live stream: its first series' resident is served as dataset 'live' and grows while frames arrive.
    std::shared_ptr<remote::LiveSource> live;
    std::optional<Dataset> live_resident;
    if (!a->live.empty()) {
      live::AcquisitionOptions ao;
      ao.backend = a->backend;
      ao.scan_rows = a->load.rows();
      ao.scan_cols = a->load.cols();
      live = std::make_shared<remote::LiveSource>(a->live, ao);
      std::fprintf(stderr, "qgpu serve: waiting for the first series from %s\n", a->live.c_str());
      live_resident = live->wait_first_resident(a->live_wait > 0 ? a->live_wait : 1e9);
      if (!live_resident) {
        std::string why;
        for (const auto& p : live->status()["problems"]) why += "; " + p.get<std::string>();
        throw IoError("no series arrived from " + a->live + (a->live_wait > 0 ? " within --live-wait" : "") + why);
      }
    }
    remote::CatalogOptions co;
    co.backend = a->backend;
    co.devices = a->devices;
    co.load = load_options(a->backend, a->dataset, a->load, "");  // every load flag, whole
    co.show_progress = true;
    remote::Catalog catalog = a->files.empty() ? remote::Catalog{} : remote::load_catalog(a->files, co);
    const std::string live_id = live ? catalog.add("live", *live_resident, -1, a->live) : "";
    remote::Server server(std::move(catalog), a->serve);
    if (live) {
      remote::ServedDataset& s = server.catalog().get(live_id);
      s.live = live;
      live->attach(s);
    }
    const int port = server.bind();
    for (const auto& s : server.catalog().all())
      std::fprintf(stderr, "qgpu serve: dataset '%s' <- %s (%s, device %d)\n", s->id.c_str(), s->path.c_str(),
                   s->cache ? "product cache" : backend_name(s->ds.backend()).c_str(), s->device);
    const bool built = std::filesystem::exists(std::filesystem::path(server.web_dir()) / "index.html");
    std::fprintf(stderr, "qgpu serve: viewer %s %s\n", built ? "from" : "NOT BUILT (npm ci && npm run build in src/remote/web) in",
                 server.web_dir().c_str());
    std::printf("qgpu serve: listening on http://%s:%d/\n", a->serve.host.c_str(), port);
    std::fflush(stdout);
    server.listen();
  });
}

}  // namespace qgpu::cli
