// The short soak (the ctest variant of bench/soak_service.cpp): 8 threads x 60 mixed requests with abandoned
// requests and 20 slow clients; every answer exact or the expected error, nothing failed, memory back near where
// it was. No timing asserts here: the latencies are reported by the bench.
#include <gtest/gtest.h>

#include "service_fixture.hpp"
#include "soak.hpp"

using namespace qgpu;

TEST(RemoteSoak, ShortLoadWithSlowAndAbandonedClientsAnswersExactly) {
  test::RunningServer srv;
  test::SoakConfig cfg;
  cfg.threads = 8;
  cfg.requests_per_thread = 60;
  cfg.slow_clients = 20;
  const test::SoakResult r = test::run_soak(srv.port(), srv.api(""), srv.dataset(), cfg);
  for (const auto& p : r.first_problems) ADD_FAILURE() << p;
  EXPECT_EQ(r.requests, 480);
  EXPECT_EQ(r.wrong, 0);
  EXPECT_EQ(r.failed, 0);
  EXPECT_GT(r.abandoned, 0);
  EXPECT_EQ(r.exact + r.expected_errors + r.busy + r.abandoned, r.requests);
  EXPECT_GT(r.exact, 0);
  EXPECT_GT(r.expected_errors, 0);
  // The slow clients were held open during the load, not cut off by the server before it ended.
  EXPECT_GT(r.slow_clients_open, 0);
  // 480 requests leave no more than 64 MiB behind (connection threads and allocator pools included).
  EXPECT_LT(r.rss_after_kb - r.rss_before_kb, 64 * 1024) << r.rss_before_kb << " -> " << r.rss_after_kb << " kB";
  std::printf("soak: %ld requests, %ld exact, %ld expected errors, %ld busy, %ld abandoned, %d slow clients, "
              "median %.3f s, max %.3f s, RSS %ld -> %ld kB\n",
              r.requests, r.exact, r.expected_errors, r.busy, r.abandoned, r.slow_clients_open, r.median_latency_s,
              r.max_latency_s, r.rss_before_kb, r.rss_after_kb);
}
