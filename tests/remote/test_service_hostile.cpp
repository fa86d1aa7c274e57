// Hostile requests (issue 10): offsets that wrap, oversized or binary mask bodies, NUL in static paths,
// host names that only look like loopback, and bursts beyond the heavy-request cap.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <fstream>

#include "detector/virtual_detector.hpp"
#include "remote/heavy_slots.hpp"
#include "remote/host_address.hpp"
#include "remote/http_error.hpp"
#include "remote/virtual_request.hpp"
#include "service_fixture.hpp"

using namespace qgpu;

namespace {

// Sends raw bytes on a fresh loopback connection and returns what the server answers until it closes
// (or 5 s pass).
std::string raw_exchange(int port, const std::string& text) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) return "";
  timeval tv{5, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::send(fd, text.data(), text.size(), MSG_NOSIGNAL);
  std::string got;
  char buf[4096];
  for (ssize_t n; (n = ::recv(fd, buf, sizeof buf, 0)) > 0;) got.append(buf, std::size_t(n));
  ::close(fd);
  return got;
}

// The 32x32 bright-field-like mask: weight 1 inside a disk of radius 8 around the centre.
std::vector<std::uint32_t> disk_weights() {
  std::vector<std::uint32_t> w(32 * 32, 0);
  for (int r = 0; r < 32; ++r)
    for (int c = 0; c < 32; ++c) w[r * 32 + c] = (r - 16) * (r - 16) + (c - 16) * (c - 16) <= 64 ? 1 : 0;
  return w;
}

std::vector<std::uint64_t> u64s(const std::string& body) {
  std::vector<std::uint64_t> v(body.size() / 8);
  std::memcpy(v.data(), body.data(), v.size() * 8);
  return v;
}

}  // namespace

TEST(RemoteHostile, OffsetsThatWrapAre400) {
  test::RunningServer srv;
  auto cli = srv.client();
  const std::string max = "18446744073709551615";
  for (const std::string q : {"/frame?row=" + max + "&col=0&format=raw", "/frame?row=0&col=" + max + "&format=raw",
                              "/window?row0=" + max + "&rows=2", "/window?col0=" + max + "&cols=2&rows=1",
                              "/window?row0=1&rows=" + max}) {
    auto res = cli.Get(srv.api(q));
    ASSERT_TRUE(res) << q;
    EXPECT_EQ(res->status, 400) << q << ": " << res->body;
    EXPECT_NE(res->body.find("out of bounds"), std::string::npos) << q << ": " << res->body;
  }
  auto ok = cli.Get(srv.api("/frame?row=7&col=7&format=raw"));
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200);
  EXPECT_EQ(ok->body.size(), 32u * 32u * 4u);
}

TEST(RemoteHostile, MaskBodyBoundedByTheDetector) {
  EXPECT_EQ(remote::mask_body_limit(32, 32), 32u * 32u * 11u + 4096u);
  try {
    remote::parse_mask_body(std::string(32 * 32 * 11 + 4097, ' '), "application/json", 32, 32);
    ADD_FAILURE() << "no exception";
  } catch (const remote::HttpError& e) {
    EXPECT_EQ(e.status, 413);
    EXPECT_NE(std::string(e.what()).find("exceeds 15360 bytes"), std::string::npos) << e.what();
  }
  test::RunningServer srv;
  // A 60 MB body is refused from its Content-Length, before a byte of it is read.
  const std::string head = "POST " + srv.api("/virtual") +
                           " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 60000000\r\n\r\n";
  const std::string answer = raw_exchange(srv.port(), head + "{\"weights\": [");
  EXPECT_EQ(answer.rfind("HTTP/1.1 413", 0), 0u) << answer.substr(0, 200);
  EXPECT_NE(answer.find("exceeds"), std::string::npos);
  // Just above the limit through an ordinary client: 413 as well; the service still answers afterwards.
  auto cli = srv.client();
  auto res = cli.Post(srv.api("/virtual"), std::string(remote::mask_body_limit(32, 32) + 1, ' '), "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 413) << res->body;
  auto after = cli.Get("/api/datasets");
  ASSERT_TRUE(after);
  EXPECT_EQ(after->status, 200);
}

TEST(RemoteHostile, BinaryMasksInEveryDtype) {
  test::RunningServer srv;
  const std::vector<std::uint32_t> w = disk_weights();
  const auto want = detector::virtual_image(srv.dataset(), detector::from_weights(32, 32, w)).counts("test").data;
  ASSERT_EQ(want.size(), 64u);
  std::string u8(w.size(), '\0'), i32(w.size() * 4, '\0'), f32(w.size() * 4, '\0');
  for (std::size_t i = 0; i < w.size(); ++i) {
    u8[i] = char(w[i]);
    const std::int32_t s = std::int32_t(w[i]);
    const float f = float(w[i]);
    std::memcpy(&i32[4 * i], &s, 4);  // the test machine is little-endian, as the format
    std::memcpy(&f32[4 * i], &f, 4);
  }
  auto cli = srv.client();
  for (const auto& [dtype, body] : {std::pair<std::string, std::string>{"uint8", u8}, {"int32", i32}, {"float32", f32}}) {
    auto res = cli.Post(srv.api("/virtual?format=u64&dtype=" + dtype), body, "application/octet-stream");
    ASSERT_TRUE(res);
    ASSERT_EQ(res->status, 200) << dtype << ": " << res->body;
    EXPECT_EQ(u64s(res->body), want) << dtype;
  }
  // The dtype may come as a header too.
  auto byheader = cli.Post(srv.api("/virtual?format=u64"), {{"X-DType", "uint8"}}, u8, "application/octet-stream");
  ASSERT_TRUE(byheader);
  ASSERT_EQ(byheader->status, 200) << byheader->body;
  EXPECT_EQ(u64s(byheader->body), want);

  std::string neg = i32, frac = f32;
  const std::int32_t minus = -1;
  const float half = 0.5f;
  std::memcpy(&neg[4 * 100], &minus, 4);
  std::memcpy(&frac[4 * 100], &half, 4);
  for (const auto& [q, body, needle] :
       {std::tuple<std::string, std::string, std::string>{"int32", neg, "mask weight 100 is negative"},
        {"float32", frac, "float32 mask weight 100"},
        {"int64", i32, "dtype must be one of"},
        {"uint8", i32, "1024 bytes), got 4096"}}) {
    auto res = cli.Post(srv.api("/virtual?format=u64&dtype=" + q), body, "application/octet-stream");
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 400) << q;
    EXPECT_NE(res->body.find(needle), std::string::npos) << res->body;
  }
}

TEST(RemoteHostile, StaticPathsWithNulOrBackslashAreRefused) {
  const std::filesystem::path web = test::temp_dir() / ("web_" + std::to_string(::getpid()));
  std::filesystem::create_directories(web);
  std::ofstream(web / "index.html") << "<html></html>";
  std::ofstream(web / "app.js") << "console.log(1);";
  remote::ServeOptions o;
  o.web_dir = web.string();
  test::RunningServer srv(o);
  auto cli = srv.client();
  auto ok = cli.Get("/app.js");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200);
  EXPECT_EQ(ok->body, "console.log(1);");
  for (const std::string p : {"/app.js%00.html", "/app.js%00", "/%0aapp.js", "/..%5capp.js"}) {
    auto res = cli.Get(p);
    ASSERT_TRUE(res) << p;
    EXPECT_EQ(res->status, 400) << p << ": " << res->body;
    EXPECT_EQ(res->body.find("console.log"), std::string::npos) << p;
  }
}

TEST(RemoteHostile, LoopbackIsTheParsedAddress) {
  for (const std::string h : {"127.0.0.1", "127.255.0.9", "::1", "[::1]", "::ffff:127.0.0.1", "localhost"})
    EXPECT_TRUE(remote::is_loopback_host(h)) << h;
  // A name that only starts like a loopback address, and addresses that are not loopback.
  for (const std::string h : {"127.0.0.1.invalid", "0.0.0.0", "::", "128.0.0.1", "10.0.0.1", "::ffff:10.0.0.1", ""})
    EXPECT_FALSE(remote::is_loopback_host(h)) << h;
  EXPECT_TRUE(remote::is_loopback_address("127.1.2.3"));
  EXPECT_FALSE(remote::is_loopback_address("localhost"));  // numeric text only
  remote::ServeOptions o;
  o.host = "127.0.0.1.invalid";
  EXPECT_THROW(remote::Server(remote::Catalog{}, o), InvalidArgument);
}

TEST(RemoteHostile, HeavySlotsCapConcurrency) {
  remote::HeavySlots slots(2, std::chrono::milliseconds(0));
  EXPECT_TRUE(slots.acquire());
  {
    const remote::HeavySlots::Slot s(slots);
    EXPECT_TRUE(s.taken());
    EXPECT_EQ(slots.free_slots(), 0u);
    EXPECT_FALSE(slots.acquire());
  }
  EXPECT_EQ(slots.free_slots(), 1u);
  slots.release();
  EXPECT_EQ(slots.free_slots(), 2u);
}

TEST(RemoteHostile, BurstBeyondTheCapIs503WithRetryAfterElseExact) {
  remote::ServeOptions o;
  o.max_heavy_requests = 1;
  o.heavy_wait_ms = 0;
  test::RunningServer srv(o);
  const std::vector<std::uint32_t> w = disk_weights();
  const auto want = detector::virtual_image(srv.dataset(), detector::from_weights(32, 32, w)).counts("test").data;
  const std::string body(reinterpret_cast<const char*>(w.data()), w.size() * 4);
  std::atomic<int> ok{0}, busy{0}, wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&] {
      auto cli = srv.client();
      for (int i = 0; i < 4; ++i) {
        auto res = cli.Post(srv.api("/virtual?format=u64"), body, "application/octet-stream");
        if (res && res->status == 200 && u64s(res->body) == want)
          ++ok;
        else if (res && res->status == 503 && res->get_header_value("Retry-After") == "1" &&
                 res->body.find("busy") != std::string::npos)
          ++busy;
        else
          ++wrong;
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_GE(ok.load(), 1);
  EXPECT_EQ(ok.load() + busy.load(), 32);
}
