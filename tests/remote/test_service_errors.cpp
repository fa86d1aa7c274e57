// Bad requests get 4xx with a JSON {"error": ...} naming the problem; the token is enforced.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "remote/http_error.hpp"
#include "service_fixture.hpp"

using namespace qgpu;

namespace {

// Status and error message of a GET.
std::pair<int, std::string> get_error(const test::RunningServer& srv, const std::string& path) {
  auto res = srv.client().Get(path);
  if (!res) return {0, "no response"};
  const auto j = nlohmann::json::parse(res->body, nullptr, false);
  return {res->status, j.is_object() && j.contains("error") ? j["error"].get<std::string>() : res->body};
}

}  // namespace

TEST(RemoteErrors, BadRequestsNameTheProblem) {
  remote::ServeOptions o;
  o.window_limit_bytes = 64 * 1024;
  test::RunningServer srv(o);
  struct Case {
    std::string path;
    int status;
    std::string words;
  };
  const std::vector<Case> cases = {
      {"/api/datasets/nope/virtual?kind=bf", 404, "unknown dataset 'nope'"},
      {srv.api("/virtual?kind=disk&r=-1"), 400, "'r' must be a number >= 0"},
      {srv.api("/virtual?kind=disk&cr=NaN&cc=3&r=4"), 400, "'cr' must be a finite number"},
      {srv.api("/virtual?kind=disk&cr=3&r=4"), 400, "both 'cr' and 'cc'"},
      {srv.api("/virtual?kind=disk"), 400, "'r' is required"},
      {srv.api("/virtual?kind=adf&inner=9&outer=4"), 400, "'inner' must not exceed"},
      {srv.api("/virtual?kind=ring"), 400, "'kind' must be one of"},
      {srv.api("/virtual?kind=disk&cr=500&cc=500&r=2"), 400, "covers no detector pixel"},
      {srv.api("/virtual?format=png&colormap=rainbow"), 400, "colormap"},
      {srv.api("/frame?row=8&col=0"), 400, "out of bounds"},
      {srv.api("/frame?row=-1&col=0"), 400, "'row' must be a non-negative integer"},
      {srv.api("/frame?col=0"), 400, "'row' is required"},
      {srv.api("/window?row0=6&rows=4"), 400, "out of bounds"},
      {srv.api("/window?bin=3"), 400, "does not divide"},
      {srv.api("/window"), 400, "exceeds the limit of 65536 bytes"},
      {srv.api("/mean_pattern?format=gif"), 400, "'format' must be one of"},
      {"/api/nothing", 404, "no route for GET /api/nothing"},
  };
  for (const Case& c : cases) {
    const auto [status, message] = get_error(srv, c.path);
    EXPECT_EQ(status, c.status) << c.path << ": " << message;
    EXPECT_NE(message.find(c.words), std::string::npos) << c.path << ": '" << message << "' lacks '" << c.words << "'";
  }
  // A small window still fits under the limit.
  auto res = srv.client().Get(srv.api("/window?rows=2&cols=2"));
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
}

TEST(RemoteErrors, BadMaskBodiesAre400) {
  test::RunningServer srv;
  auto cli = srv.client();
  auto res = cli.Post(srv.api("/virtual"), "{\"weights\": [1, 2]}", "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 400) << res->body;
  res = cli.Post(srv.api("/virtual"), "not json", "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 400);
  res = cli.Post(srv.api("/virtual"), std::string(32 * 32 * 4, '\0'), "application/octet-stream");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 400) << res->body;  // no nonzero weight
  res = cli.Post(srv.api("/virtual"), std::string(10, '\1'), "application/octet-stream");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 400);
}

TEST(RemoteErrors, TokenIsRequiredWhenSet) {
  remote::ServeOptions o;
  o.token = "s3cret";
  test::RunningServer srv(o);
  auto cli = srv.client();
  auto res = cli.Get("/api/datasets");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 401);
  EXPECT_NE(res->body.find("token"), std::string::npos);
  res = cli.Get("/api/datasets", {{"Authorization", "Bearer wrong"}});
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 401);
  res = cli.Get("/api/datasets?token=s3cre");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 401);
  res = cli.Get("/api/datasets", {{"Authorization", "Bearer s3cret"}});
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  res = cli.Get(srv.api("/virtual?kind=bf&format=u64&token=s3cret"));
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_NE(res->get_header_value("Set-Cookie").find("qgpu_token=s3cret"), std::string::npos);
  res = cli.Get("/api/datasets", {{"Cookie", "other=1; qgpu_token=s3cret"}});
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
}

TEST(RemoteErrors, NonLoopbackHostNeedsAToken) {
  remote::ServeOptions o;
  o.host = "0.0.0.0";
  EXPECT_THROW(remote::Server(remote::Catalog{}, o), InvalidArgument);
  EXPECT_TRUE(remote::is_loopback_host("127.0.0.1"));
  EXPECT_TRUE(remote::is_loopback_host("localhost"));
  EXPECT_TRUE(remote::is_loopback_host("::1"));
  EXPECT_FALSE(remote::is_loopback_host("192.168.1.4"));
}

TEST(RemoteErrors, DeviceFailuresMapTo503And507WithTheirMessage) {
  auto status_of = [](auto error) { return remote::classify(std::make_exception_ptr(error)); };
  const auto oom = status_of(OutOfMemory("cannot allocate 1000 bytes on the GPU (10 bytes free of 80 on the GPU)"));
  EXPECT_EQ(oom.status, 507);
  EXPECT_NE(oom.message.find("1000 bytes"), std::string::npos);
  const auto dev = status_of(DeviceError("CUDA error in kernel: illegal address"));
  EXPECT_EQ(dev.status, 503);
  EXPECT_EQ(dev.message, "CUDA error in kernel: illegal address");
  EXPECT_EQ(status_of(std::bad_alloc()).status, 507);
  EXPECT_EQ(status_of(BackendUnavailable("no GPU")).status, 503);
  EXPECT_EQ(status_of(Error("bug")).status, 500);
}
