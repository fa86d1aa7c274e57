// qgpu live SOURCE: a detector's stream (DECTRIS stream V2/V1, Merlin TCP) into a resident dataset, with a progress
// line, and the images of `qgpu image` written for every series that ends.
// qgpu simulate-detector FILE: replays a file as such a stream (live/simulate.hpp), for tests and demos.
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <thread>

#include "cli/checks.hpp"
#include "cli/commands.hpp"
#include "cli/outputs.hpp"
#include "core/error.hpp"
#include "live/acquisition.hpp"
#include "live/receive.hpp"
#include "live/simulate.hpp"

namespace qgpu::cli {

namespace {

std::atomic<bool> g_interrupted{false};
void on_interrupt(int) { g_interrupted = true; }

std::string thousands(double v) {
  std::string s = std::to_string(static_cast<long long>(v + 0.5));
  for (int i = int(s.size()) - 3; i > 0; i -= 3) s.insert(std::size_t(i), ",");
  return s;
}

}  // namespace

void add_live(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "live", "Receive a detector's stream into the GPU (or host) and image each series as it ends");
  struct Args {
    std::string source, out = "live", backend = "auto", channel, pixel_mask = "keep", save;
    std::vector<std::size_t> scan_shape;
    std::vector<double> center;
    std::optional<double> radius;
    std::size_t series = 1, ring_mib = 256;
    double idle_timeout = 0;
    unsigned parse_threads = live::ReceiveOptions{}.parse_threads;
  };
  auto a = std::make_shared<Args>();
  cmd->option_defaults()->always_capture_default();
  cmd->add_option("source", a->source,
                  "dectris://HOST[:PORT] (stream V2, 31001), dectris-v1://HOST[:PORT] (stream V1, 9999) or "
                  "merlin://HOST[:PORT] (data port, 6342)")
      ->required();
  cmd->add_option("--scan-shape", a->scan_shape, "ROWS COLS of the scan (else the stream's, else a square count)")
      ->expected(2);
  cmd->add_option("-o,--out", a->out, "output folder: one subfolder per series (series-<id>/)");
  cmd->add_option("--backend", a->backend, "cpu | cuda | auto");
  cmd->add_option("--series", a->series, "series to receive before stopping (0: until Ctrl-C)");
  cmd->add_option("--idle-timeout", a->idle_timeout, "stop when nothing arrived for this many seconds (0: never)");
  cmd->add_option("--parse-threads", a->parse_threads,
                  "DECTRIS streams: threads decoding messages beside the socket thread (0: the socket thread decodes)")
      ->capture_default_str();
  cmd->add_option("--channel", a->channel, "stream V2: the image channel (default: the first of each image)");
  cmd->add_option("--ring-mib", a->ring_mib, "received frames waiting for the decoder, at most (MiB)")
      ->check(CLI::Range(std::size_t(1), std::size_t(1) << 20));
  cmd->add_option("--pixel-mask", a->pixel_mask, "keep | zero: the detector's bad pixels set to 0");
  cmd->add_option("--center", a->center, "ROW COL of the BF disk (default: fitted on the first frames)")->expected(2);
  cmd->add_option("--radius", a->radius, "radius of the BF disk in pixels (default: fitted)");
  cmd->add_option("--save", a->save,
                  "also write each series as it arrives to this DECTRIS-style HDF5 file (chunks stored verbatim; "
                  "series after the first: <stem>_series<id>.h5)");
  cmd->callback([a] {
    check_backend_name(a->backend);
    if (a->idle_timeout < 0) throw InvalidArgument("--idle-timeout: not negative");
    const live::Endpoint ep = live::parse_endpoint(a->source);
    const std::filesystem::path out = output_folder(a->out);
    live::AcquisitionOptions ao;
    ao.backend = a->backend;
    if (!a->scan_shape.empty()) {
      ao.scan_rows = a->scan_shape[0];
      ao.scan_cols = a->scan_shape[1];
      if (!ao.scan_rows || !ao.scan_cols) throw InvalidArgument("--scan-shape: ROWS and COLS must be positive");
    }
    ao.ring_bytes = a->ring_mib << 20;
    ao.pixel_mask = a->pixel_mask;
    ao.save_path = a->save;
    for (double v : a->center) check_finite("--center", v);
    if (a->radius) check_positive("--radius", *a->radius);
    if (!a->center.empty()) ao.disk_center = std::make_pair(a->center[0], a->center[1]);
    ao.disk_radius = a->radius;
    live::Acquisition acq(ao);
    acq.on_series_end([out, a](const live::FinishedSeries& fs) {
      const auto& rep = fs.dataset.provenance().parameters;
      const std::string id = rep.value("series_id", std::string("0"));
      const std::filesystem::path dir = out / ("series-" + id);
      std::filesystem::create_directories(dir);
      std::fprintf(stderr, "\nqgpu live: series %s ended (%s): %llu of %llu frames, %llu missing\n", id.c_str(),
                   rep.value("end", std::string()).c_str(),
                   static_cast<unsigned long long>(rep.value("frames_received", std::uint64_t(0))),
                   static_cast<unsigned long long>(fs.dataset.shape().frames()),
                   static_cast<unsigned long long>(rep.value("missing", std::uint64_t(0))));
      write_json(dir / "live.json", rep);
      if (rep.contains("saved") && rep["saved"].is_string())
        std::printf("qgpu live: series %s saved to %s\n", id.c_str(), rep["saved"].get<std::string>().c_str());
      if (rep.value("frames_received", std::uint64_t(0)) == 0) {
        std::fprintf(stderr, "qgpu live: series %s holds no frame: no images\n", id.c_str());
        return;
      }
      try {
        write_scan_images(fs.dataset, dir.string(), a->center, a->radius);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "qgpu live: series %s: images not written: %s\n", id.c_str(), e.what());
      }
      std::printf("qgpu live: series %s -> %s\n", id.c_str(), dir.string().c_str());
      std::fflush(stdout);
    });
    live::ReceiveOptions ro;
    ro.channel = a->channel;
    ro.series = a->series;
    ro.idle_timeout_s = a->idle_timeout;
    ro.parse_threads = a->parse_threads;
    live::validate(ro);
    live::Receiver receiver(ep, acq, ro);
    std::signal(SIGINT, on_interrupt);
    std::signal(SIGTERM, on_interrupt);
    std::atomic<bool> done{false};
    std::thread progress([&] {
      const bool tty = isatty(fileno(stderr)) == 1;
      int ticks = 0;
      while (!done) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        if (g_interrupted) receiver.stop();
        if (++ticks % (tty ? 5 : 50) != 0) continue;
        const live::Stats st = acq.stats();
        const live::LiveProducts p = acq.products();
        std::fprintf(stderr, "%sseries %s: %llu/%zu frames, %s frames/s, dropped %llu, latency %.1f ms%s",
                     tty ? "\r" : "", p.series_id.empty() ? "-" : p.series_id.c_str(),
                     static_cast<unsigned long long>(p.frames_received), p.scan_rows * p.scan_cols,
                     thousands(st.frames_per_second).c_str(), static_cast<unsigned long long>(st.dropped),
                     st.latency_ms, tty ? "   " : "\n");
        std::fflush(stderr);
      }
    });
    std::printf("qgpu live: receiving %s (backend %s) -> %s\n", ep.url().c_str(), acq.backend().c_str(),
                out.string().c_str());
    std::fflush(stdout);
    try {
      receiver.run();
    } catch (...) {
      done = true;
      progress.join();
      throw;
    }
    acq.close();  // decodes what is left, ends an open series ("stopped")
    done = true;
    progress.join();
    const live::Stats st = acq.stats();
    const auto problems = acq.products().problems;
    for (const auto& p : problems) std::fprintf(stderr, "qgpu live: %s\n", p.c_str());
    std::printf("qgpu live: %llu series, %llu frames decoded, %llu dropped, %llu corrupt, %llu duplicates, "
                "%llu outside the scan, %llu stale ends; max latency %.1f ms\n",
                static_cast<unsigned long long>(st.series_finished), static_cast<unsigned long long>(st.frames_decoded),
                static_cast<unsigned long long>(st.dropped), static_cast<unsigned long long>(st.corrupt),
                static_cast<unsigned long long>(st.duplicates), static_cast<unsigned long long>(st.out_of_range),
                static_cast<unsigned long long>(st.stale), st.max_latency_ms);
  });
}

void add_simulate_detector(CLI::App& app) {
  auto* cmd = app.add_subcommand("simulate-detector",
                                 "Replay a file as a detector's live stream (DECTRIS stream V2/V1, Merlin TCP)");
  struct Args {
    std::string file;
    live::SimulateOptions o;
    std::vector<std::size_t> scan_shape;
  };
  auto a = std::make_shared<Args>();
  cmd->option_defaults()->always_capture_default();
  cmd->add_option("file", a->file, "4D-STEM file (HDF5 chunks are sent verbatim; other formats are encoded)")
      ->required();
  cmd->add_option("--protocol", a->o.protocol, "dectris-v2 | dectris-v1 | merlin");
  cmd->add_option("--host", a->o.host, "address to bind");
  cmd->add_option("--port", a->o.port, "port (0: the protocol's: 31001, 9999, 6342)");
  cmd->add_option("--rate", a->o.rate, "frames per second (0: as fast as the receiver takes them)");
  cmd->add_option("--repeat", a->o.repeat, "series to send")->check(CLI::Range(std::size_t(1), std::size_t(1) << 20));
  cmd->add_option("--scan-shape", a->scan_shape, "ROWS COLS when the file states none")->expected(2);
  cmd->add_option("--wait", a->o.connect_timeout_s, "seconds to wait for a receiver");
  cmd->callback([a] {
    if (!a->scan_shape.empty()) {
      a->o.scan_rows = a->scan_shape[0];
      a->o.scan_cols = a->scan_shape[1];
    }
    if (a->o.rate < 0 || a->o.connect_timeout_s <= 0) throw InvalidArgument("--rate >= 0 and --wait > 0");
    a->o.log = [](const std::string& s) {
      std::fprintf(stderr, "qgpu simulate-detector: %s\n", s.c_str());
      std::fflush(stderr);
    };
    static std::atomic<bool> stop{false};
    std::signal(SIGINT, [](int) { stop = true; });
    std::signal(SIGTERM, [](int) { stop = true; });
    const live::SimulateReport r = live::simulate_detector(a->file, a->o, &stop);
    std::printf("qgpu simulate-detector: sent %llu frames (%s) in %.3f s: %s frames/s, %.1f MB/s\n",
                static_cast<unsigned long long>(r.frames_sent), r.source.c_str(), r.seconds,
                thousands(r.frames_per_second).c_str(), r.seconds > 0 ? double(r.bytes_sent) / r.seconds / 1e6 : 0.0);
  });
}

}  // namespace qgpu::cli
