#pragma once
// Service soak: T client threads x N requests of a mix (virtual images, binary masks, frames, windows, wrapping
// offsets, oversized bodies) against a running service while S slow clients trickle header bytes and every
// k-th request is abandoned mid-flight. Every answer is checked against the CPU reference; RSS is read before
// and after. Shared by the ctest variant (tests/remote/test_service_soak.cpp) and bench/soak_service.cpp.
#include <httplib.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "detector/virtual_detector.hpp"
#include "remote/frame_window.hpp"
#include "remote/virtual_request.hpp"
#include "resident/dataset.hpp"

namespace qgpu::test {

struct SoakConfig {
  int threads = 8;
  int requests_per_thread = 50;
  int slow_clients = 20;
  int abandon_every = 7;  // every k-th request of a thread is sent and then dropped (0: none)
};

struct SoakResult {
  long requests = 0, exact = 0, expected_errors = 0, busy = 0, wrong = 0, failed = 0, abandoned = 0;
  int slow_clients_open = 0;  // slow clients still connected when the load ended
  double max_latency_s = 0, median_latency_s = 0;
  long rss_before_kb = 0, rss_after_kb = 0;
  std::vector<std::string> first_problems;
};

inline long rss_kb() {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  return 0;
}

inline int loopback_connect(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd >= 0 && ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) return fd;
  if (fd >= 0) ::close(fd);
  return -1;
}

// Sends a request, maybe reads a few bytes of the answer, then resets the connection.
inline void abandon(int port, const std::string& text, bool read_some) {
  const int fd = loopback_connect(port);
  if (fd < 0) return;
  ::send(fd, text.data(), text.size(), MSG_NOSIGNAL);
  if (read_some) {
    char buf[64];
    (void)::recv(fd, buf, sizeof buf, 0);
  }
  linger l{1, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
  ::close(fd);
}

// Runs the soak against a service on `port` serving `ds` under dataset id path prefix `api` ("/api/datasets/ID").
inline SoakResult run_soak(int port, const std::string& api, const Dataset& ds, const SoakConfig& cfg) {
  const Shape4D& sh = ds.shape();
  // References, computed directly on the CPU dataset.
  const auto bf = detector::bf(ds).counts("test").data;
  std::vector<std::uint32_t> w(sh.frame_pixels(), 0);
  for (std::size_t i = 0; i < w.size(); i += 3) w[i] = std::uint32_t(i % 5);
  const auto masked = detector::virtual_image(ds, detector::from_weights(sh.det_rows, sh.det_cols, w)).counts("test").data;
  const std::string too_big(remote::mask_body_limit(sh.det_rows, sh.det_cols) + 1, ' ');
  const std::string mask_body(reinterpret_cast<const char*>(w.data()), w.size() * 4);
  const std::size_t fr = sh.scan_rows / 2, fc = sh.scan_cols / 3;
  const std::vector<std::uint64_t> frame64 = remote::read_frame_values(ds, fr, fc).counts("test").data;
  const std::vector<std::uint32_t> frame(frame64.begin(), frame64.end());
  const remote::FrameWindow win = remote::read_window(ds, Region{1, 0, 2, sh.scan_cols}, 1, std::size_t(1) << 30);
  auto as_bytes = [](const auto& v) { return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(v[0])); };
  const std::string want_bf = as_bytes(bf), want_masked = as_bytes(masked), want_frame = as_bytes(frame),
                    want_window = as_bytes(win.counts);

  SoakResult r;
  r.rss_before_kb = rss_kb();
  std::mutex m;
  std::vector<double> latencies;
  auto problem = [&](const std::string& what) {
    std::lock_guard<std::mutex> lock(m);
    if (r.first_problems.size() < 10) r.first_problems.push_back(what);
  };

  // Slow clients: a partial request line, then one header byte every 300 ms until the load ends.
  std::atomic<bool> load_done{false};
  std::atomic<int> slow_open{0};
  std::vector<std::thread> slow;
  for (int i = 0; i < cfg.slow_clients; ++i)
    slow.emplace_back([&] {
      const int fd = loopback_connect(port);
      if (fd < 0) return;
      ++slow_open;
      const std::string head = "GET /api/datasets HTTP/1.1\r\nX-Slow: ";
      bool alive = ::send(fd, head.data(), head.size(), MSG_NOSIGNAL) > 0;
      while (alive && !load_done) {
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        alive = ::send(fd, "a", 1, MSG_NOSIGNAL) == 1;
      }
      if (!alive) --slow_open;
      ::close(fd);
    });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // let them occupy their threads first

  std::atomic<long> exact{0}, expected{0}, busy{0}, wrong{0}, failed{0}, abandoned{0}, total{0};
  std::vector<std::thread> workers;
  for (int t = 0; t < cfg.threads; ++t)
    workers.emplace_back([&, t] {
      httplib::Client cli("127.0.0.1", port);
      cli.set_read_timeout(60, 0);
      std::vector<double> mine;
      for (int i = 0; i < cfg.requests_per_thread; ++i) {
        ++total;
        const int kind = (t + i) % 6;
        if (cfg.abandon_every > 0 && i % cfg.abandon_every == cfg.abandon_every - 1) {
          abandon(port, "GET " + api + "/window HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", i % 2);
          ++abandoned;
          continue;
        }
        const auto t0 = std::chrono::steady_clock::now();
        const std::string* want = nullptr;
        int want_status = 200;
        auto send = [&]() -> httplib::Result {
          switch (kind) {
            case 0: want = &want_bf; return cli.Get(api + "/virtual?kind=bf&format=u64");
            case 1: want = &want_masked; return cli.Post(api + "/virtual?format=u64", mask_body, "application/octet-stream");
            case 2:
              want = &want_frame;
              return cli.Get(api + "/frame?format=raw&row=" + std::to_string(fr) + "&col=" + std::to_string(fc));
            case 3: want = &want_window; return cli.Get(api + "/window?row0=1&rows=2");
            case 4: want_status = 400; return cli.Get(api + "/window?row0=18446744073709551615&rows=2");
            default: want_status = 413; return cli.Post(api + "/virtual", too_big, "application/json");
          }
        };
        const httplib::Result res = send();
        mine.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
        if (!res) {
          ++failed;
          problem("request kind " + std::to_string(kind) + " failed: " + httplib::to_string(res.error()));
        } else if (res->status == 503 && !res->get_header_value("Retry-After").empty()) {
          ++busy;
        } else if (res->status != want_status || (want_status == 200 && res->body != *want)) {
          ++wrong;
          problem("kind " + std::to_string(kind) + ": status " + std::to_string(res->status) + ", " +
                  std::to_string(res->body.size()) + " bytes");
        } else {
          ++(want_status == 200 ? exact : expected);
        }
      }
      std::lock_guard<std::mutex> lock(m);
      latencies.insert(latencies.end(), mine.begin(), mine.end());
    });
  for (auto& w : workers) w.join();
  r.slow_clients_open = slow_open.load();
  load_done = true;
  for (auto& s : slow) s.join();
  r.requests = total;
  r.exact = exact;
  r.expected_errors = expected;
  r.busy = busy;
  r.wrong = wrong;
  r.failed = failed;
  r.abandoned = abandoned;
  std::sort(latencies.begin(), latencies.end());
  if (!latencies.empty()) {
    r.max_latency_s = latencies.back();
    r.median_latency_s = latencies[latencies.size() / 2];
  }
  // One more exact answer after the load.
  httplib::Client cli("127.0.0.1", port);
  auto after = cli.Get(api + "/virtual?kind=bf&format=u64");
  if (!after || after->status != 200 || after->body != want_bf) {
    ++r.wrong;
    problem("answer after the load differs");
  }
  r.rss_after_kb = rss_kb();
  return r;
}

}  // namespace qgpu::test
