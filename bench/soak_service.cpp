// Service soak (issue 10): an in-process `qgpu serve` (cpu backend) on a simulated dataset, loaded by
// THREADS x REQUESTS mixed requests with abandoned requests and SLOW slow-header clients; prints one JSON line
// (answers exact / expected errors / busy / wrong / failed, latencies, RSS before and after) and exits 1 on any
// wrong or failed answer. The short variant runs in ctest as RemoteSoak.* (tests/remote/test_service_soak.cpp).
// ROUNDS rounds run back to back on the same server: RSS that levels off after the first is allocator pools and
// connection threads, RSS that keeps growing would be a leak.
//   usage: soak_service [THREADS=16] [REQUESTS=500] [SLOW=40] [ABANDON_EVERY=7] [SCAN=32] [DET=64] [ROUNDS=3]
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "bench_common.hpp"
#include "io/hdf5/load.hpp"
#include "remote/server.hpp"
#include "remote/soak.hpp"
#include "bench_guard.hpp"

using namespace qgpu;

static int bench_main(int argc, char** argv) {
  auto arg = [&](int i, int fallback) { return argc > i ? std::atoi(argv[i]) : fallback; };
  test::SoakConfig cfg;
  cfg.threads = arg(1, 16);
  cfg.requests_per_thread = arg(2, 500);
  cfg.slow_clients = arg(3, 40);
  cfg.abandon_every = arg(4, 7);
  const std::size_t scan = std::size_t(arg(5, 32)), det = std::size_t(arg(6, 64));
  const std::string path = bench::ensure_sample("/tmp/qgpu_soak_" + std::to_string(scan) + "_" + std::to_string(det) +
                                                    ".h5",
                                                scan, det, DType::u16);
  io::LoadOptions o;
  o.backend = "cpu";
  const Dataset ds = io::load(path, o);
  remote::Catalog catalog;
  const std::string id = catalog.add("soak", ds);
  remote::ServeOptions so;
  so.host = "127.0.0.1";
  so.port = 0;
  so.log_requests = false;
  remote::Server server(std::move(catalog), so);
  const int port = server.bind();
  std::thread listener([&] { server.listen(); });
  const int rounds = arg(7, 3);
  bool clean = true;
  for (int round = 1; round <= rounds; ++round) {
    const double t0 = bench::now_s();
    const test::SoakResult r = test::run_soak(port, "/api/datasets/" + id, ds, cfg);
    const double seconds = bench::now_s() - t0;
    std::printf("{\"round\": %d, \"threads\": %d, \"requests\": %ld, \"exact\": %ld, \"expected_errors\": %ld, "
                "\"busy\": %ld, \"abandoned\": %ld, \"wrong\": %ld, \"failed\": %ld, \"slow_clients\": %d, "
                "\"seconds\": %.2f, \"median_latency_s\": %.4f, \"max_latency_s\": %.3f, \"rss_before_kb\": %ld, "
                "\"rss_after_kb\": %ld}\n",
                round, cfg.threads, r.requests, r.exact, r.expected_errors, r.busy, r.abandoned, r.wrong, r.failed,
                r.slow_clients_open, seconds, r.median_latency_s, r.max_latency_s, r.rss_before_kb, r.rss_after_kb);
    std::fflush(stdout);
    for (const auto& p : r.first_problems) std::fprintf(stderr, "problem: %s\n", p.c_str());
    clean = clean && r.wrong == 0 && r.failed == 0;
  }
  server.stop();
  listener.join();
  return clean ? 0 : 1;
}

QGPU_BENCH_MAIN("usage: soak_service [THREADS=16] [REQUESTS=500] [SLOW=40] [ABANDON_EVERY=7] [SCAN=32] [DET=64] [ROUNDS=3]")
