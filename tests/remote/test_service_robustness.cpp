// Clients that go away mid-request do not disturb the service; computations on a dataset are serialized.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstring>

#include "detector/virtual_detector.hpp"
#include "service_fixture.hpp"

using namespace qgpu;

namespace {

// Connects to the server, sends `text`, optionally reads a few bytes, then resets the connection.
void send_and_vanish(int port, const std::string& text, bool read_some) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(::send(fd, text.data(), text.size(), MSG_NOSIGNAL), ssize_t(text.size()));
  if (read_some) {
    char buf[64];
    (void)::recv(fd, buf, sizeof buf, 0);
  }
  linger l{1, 0};  // RST instead of FIN: the server's writes fail at once
  ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
  ::close(fd);
}

}  // namespace

TEST(RemoteRobustness, ClientsVanishingMidRequestLeaveTheServiceRunning) {
  test::RunningServer srv;
  const std::string window = "GET " + srv.api("/window") + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
  send_and_vanish(srv.port(), "GET /api/datasets HTTP/1.1\r\nHost: 127.0.0.1\r\n", false);  // half a request
  send_and_vanish(srv.port(), window, false);  // gone before the answer
  send_and_vanish(srv.port(), window, true);   // gone during the answer
  send_and_vanish(srv.port(), "POST " + srv.api("/virtual") + " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 4096\r\n\r\n{", false);
  auto res = srv.client().Get(srv.api("/virtual?kind=bf&format=u64"));
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->body.size(), 8u * 8u * 8u);
}

TEST(RemoteRobustness, ConcurrentRequestsAllAnswerExactly) {
  test::RunningServer srv;
  const auto want = detector::bf(srv.dataset()).counts("test").data;
  std::atomic<int> ok{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 5; ++i) {
        auto res = srv.client().Get(srv.api("/virtual?kind=bf&format=u64"));
        if (res && res->status == 200 && res->body.size() == want.size() * 8 &&
            std::memcmp(res->body.data(), want.data(), res->body.size()) == 0)
          ++ok;
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), 20);
}
