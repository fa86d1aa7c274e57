// The Host-header and cross-origin rule (issue 25, point 7): without a token the service answers only loopback
// names (localhost, 127.x.y.z, [::1]), the name it was bound to and --allow-host names; `curl -H 'Host: evil.com'`
// answered 200 with frames and windows (DNS rebinding). Other Hosts are 421, foreign Origins 403; with a token any
// Host is answered, and the token is required.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "remote/host_address.hpp"
#include "service_fixture.hpp"
#include "support/expect_error.hpp"

using namespace qgpu;

namespace {

using Names = std::vector<std::string>;

// Sends one request with exactly these header lines on a fresh loopback connection; the status code, or -1.
int raw_status(int port, const std::string& path, const std::string& header_lines) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) return -1;
  timeval tv{5, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  const std::string req = "GET " + path + " HTTP/1.1\r\n" + header_lines + "Connection: close\r\n\r\n";
  ::send(fd, req.data(), req.size(), MSG_NOSIGNAL);
  std::string got;
  char buf[4096];
  for (ssize_t n; (n = ::recv(fd, buf, sizeof buf, 0)) > 0;) got.append(buf, std::size_t(n));
  ::close(fd);
  if (got.rfind("HTTP/1.1 ", 0) != 0 || got.size() < 12) return -1;
  return std::stoi(got.substr(9, 3));
}

httplib::Result get_with(const test::RunningServer& srv, const std::string& path, const httplib::Headers& h) {
  auto cli = srv.client();
  return cli.Get(path, h);
}

}  // namespace

TEST(RemoteHost, HostHeaderParsing) {
  EXPECT_EQ(remote::host_of_header("localhost"), "localhost");
  EXPECT_EQ(remote::host_of_header("LocalHost:8321"), "localhost");
  EXPECT_EQ(remote::host_of_header("localhost.:80"), "localhost");
  EXPECT_EQ(remote::host_of_header("127.0.0.1:8321"), "127.0.0.1");
  EXPECT_EQ(remote::host_of_header("[::1]:8321"), "[::1]");
  EXPECT_EQ(remote::host_of_header("[::1]"), "[::1]");
  EXPECT_EQ(remote::host_of_header("evil.com"), "evil.com");
  for (const std::string& bad : Names{"", ":80", "::1", "[::1", "[::1]x", "[nothex]", "a b", "host:", "host:8x",
                                "host:123456", "a:1:2", "evil.com/x", "user@host", "."})
    EXPECT_EQ(remote::host_of_header(bad), std::nullopt) << bad;
}

TEST(RemoteHost, LoopbackNamesAreLiteralsAndLocalhostOnly) {
  for (const std::string& good : Names{"localhost", "127.0.0.1", "127.1.2.3", "[::1]", "[::ffff:127.0.0.1]"})
    EXPECT_TRUE(remote::is_loopback_name(good)) << good;
  for (const std::string& bad : Names{"evil.com", "localhost.evil.com", "127.0.0.1.nip.io", "127.1", "2130706433",
                                "0x7f.0.0.1", "10.0.0.1", "[::2]", "::1", "localhostx", "ip6-localhost"})
    EXPECT_FALSE(remote::is_loopback_name(bad)) << bad;
}

TEST(RemoteHost, ForeignHostsAre421OnEveryRouteLoopbackNamesAre200) {
  test::RunningServer srv;
  const std::string port = std::to_string(srv.port());
  for (const std::string& path : Names{std::string("/api/datasets"), srv.api("/frame?row=1&col=1&format=raw"),
                                 srv.api("/window?row0=0&col0=0&rows=2&cols=2"), std::string("/")}) {
    for (const std::string& host : Names{"evil.com", "localhost.evil.com", "127.0.0.1.nip.io", "evil.com:" + port,
                                   "127.0.0.1.nip.io:" + port, "localhost.evil.com:" + port}) {
      auto res = get_with(srv, path, {{"Host", host}});
      ASSERT_TRUE(res) << host;
      EXPECT_EQ(res->status, 421) << path << " Host: " << host << " -> " << res->body;
      EXPECT_NE(res->body.find("is not served here"), std::string::npos) << res->body;
      EXPECT_NE(res->body.find("--allow-host"), std::string::npos) << res->body;
      EXPECT_EQ(res->body.find("\"frames\""), std::string::npos);
    }
  }
  for (const std::string& host : Names{"127.0.0.1:" + port, "localhost:" + port, "LOCALHOST:" + port, "[::1]:" + port,
                                 "127.0.0.1", "localhost", "127.4.5.6:" + port}) {
    auto res = get_with(srv, "/api/datasets", {{"Host", host}});
    ASSERT_TRUE(res) << host;
    EXPECT_EQ(res->status, 200) << "Host: " << host << " -> " << res->body;
  }
  auto frame = get_with(srv, srv.api("/frame?row=1&col=1&format=raw"), {{"Host", "localhost:" + port}});
  ASSERT_TRUE(frame);
  EXPECT_EQ(frame->status, 200);
  EXPECT_EQ(frame->body.size(), 32u * 32u * 4u);
  // No Host at all (HTTP/1.0 style) and a malformed one: 421 as well.
  EXPECT_EQ(raw_status(srv.port(), "/api/datasets", ""), 421);
  EXPECT_EQ(raw_status(srv.port(), "/api/datasets", "Host: evil.com:80:80\r\n"), 421);
  EXPECT_EQ(raw_status(srv.port(), "/api/datasets", "Host: 127.0.0.1:" + port + "\r\n"), 200);
}

TEST(RemoteHost, CrossOriginWithoutTokenIs403SameOriginIs200) {
  test::RunningServer srv;
  const std::string port = std::to_string(srv.port());
  const std::string self = "127.0.0.1:" + port;
  for (const std::string& origin : Names{"http://evil.com", "http://evil.com:" + port, "http://localhost.evil.com",
                                   "http://127.0.0.1.nip.io:" + port, "null", "file://", "garbage"}) {
    auto res = get_with(srv, "/api/datasets", {{"Host", self}, {"Origin", origin}});
    ASSERT_TRUE(res) << origin;
    EXPECT_EQ(res->status, 403) << "Origin: " << origin << " -> " << res->body;
    EXPECT_NE(res->body.find("cross-origin request from '" + origin + "' refused"), std::string::npos) << res->body;
  }
  httplib::Headers post_headers{{"Host", self}, {"Origin", "http://evil.com"}};
  auto cli = srv.client();
  auto posted = cli.Post(srv.api("/virtual?format=u64"), post_headers, "{\"weights\": [1]}", "application/json");
  ASSERT_TRUE(posted);
  EXPECT_EQ(posted->status, 403);
  for (const std::string& origin : Names{"http://" + self, "http://localhost:" + port, "http://[::1]:" + port}) {
    auto res = get_with(srv, "/api/datasets", {{"Host", self}, {"Origin", origin}});
    ASSERT_TRUE(res) << origin;
    EXPECT_EQ(res->status, 200) << "Origin: " << origin << " -> " << res->body;
  }
}

TEST(RemoteHost, AllowHostNamesAreAnsweredOthersStill421) {
  remote::ServeOptions o;
  o.allowed_hosts = {"scope.lab.example", "Viewer.Example:9000"};
  test::RunningServer srv(o);
  const std::string port = std::to_string(srv.port());
  for (const std::string& host : Names{"scope.lab.example", "scope.lab.example:" + port, "viewer.example:" + port}) {
    auto res = get_with(srv, "/api/datasets", {{"Host", host}, {"Origin", "http://" + host}});
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 200) << host << " -> " << res->body;
  }
  for (const std::string& host : Names{"evil.com", "lab.example", "scope.lab.example.evil.com"}) {
    auto res = get_with(srv, "/api/datasets", {{"Host", host}});
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 421) << host;
  }
  remote::ServeOptions bad;
  bad.allowed_hosts = {"two words"};
  test::expect_error<InvalidArgument>([&] { test::RunningServer s(bad); },
                                      {"--allow-host: 'two words' is not a host name"});
}

TEST(RemoteHost, WithATokenAnyHostIsAnsweredButTheTokenIsRequired) {
  remote::ServeOptions o;
  o.token = "s3cret";
  test::RunningServer srv(o);
  for (const std::string& host : Names{"evil.com", "scope.example:8321", "127.0.0.1"}) {
    auto without = get_with(srv, "/api/datasets", {{"Host", host}});
    ASSERT_TRUE(without);
    EXPECT_EQ(without->status, 401) << host;
    auto with = get_with(srv, "/api/datasets", {{"Host", host}, {"Authorization", "Bearer s3cret"}});
    ASSERT_TRUE(with);
    EXPECT_EQ(with->status, 200) << host << " -> " << with->body;
    auto cross = get_with(srv, "/api/datasets",
                          {{"Host", host}, {"Origin", "http://evil.com"}, {"Authorization", "Bearer s3cret"}});
    ASSERT_TRUE(cross);
    EXPECT_EQ(cross->status, 200) << host;
    auto cross_without = get_with(srv, "/api/datasets", {{"Host", host}, {"Origin", "http://evil.com"}});
    ASSERT_TRUE(cross_without);
    EXPECT_EQ(cross_without->status, 401) << host;
  }
}
