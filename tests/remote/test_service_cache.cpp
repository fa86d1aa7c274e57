// `qgpu serve products.h5`: the service answers from a product cache alone (the source removed, no GPU needed
// even with backend auto): cached products equal the library's on the raw data; raw-only requests are 404.
#include <gtest/gtest.h>
#include <httplib.h>

#include <cmath>
#include <cstring>
#include <filesystem>

#include "cache/cache.hpp"
#include "detector/virtual_detector.hpp"
#include "dpc/com.hpp"
#include "dpc/idpc.hpp"
#include "dpc/rotation.hpp"
#include "remote/catalog.hpp"
#include "service_fixture.hpp"

using namespace qgpu;

namespace {

template <class T> std::vector<T> as_vector(const std::string& body) {
  std::vector<T> v(body.size() / sizeof(T));
  std::memcpy(v.data(), body.data(), v.size() * sizeof(T));
  return v;
}

struct CacheServer {
  Dataset ds;
  std::unique_ptr<remote::Server> server;
  std::thread thread;
  int port = 0;
  std::string id;

  CacheServer() {
    const std::string source = test::temp_path("source.h5"), products = test::temp_path("products.h5");
    std::filesystem::copy_file(test::remote_sample_path(), source, std::filesystem::copy_options::overwrite_existing);
    ds = test::load_cpu(source);
    cache::BuildOptions o;
    o.adf_ranges = {{8, 14}};
    cache::build(ds, products, o);
    std::filesystem::remove(source);
    remote::CatalogOptions co;  // backend auto: a cache needs no GPU
    remote::ServeOptions so;
    so.host = "127.0.0.1";
    so.port = 0;
    so.log_requests = false;
    remote::Catalog catalog = remote::load_catalog({products}, co);
    id = catalog.all().at(0)->id;
    server = std::make_unique<remote::Server>(std::move(catalog), so);
    port = server->bind();
    thread = std::thread([this] { server->listen(); });
  }
  ~CacheServer() {
    server->stop();
    thread.join();
  }
  httplib::Result get(const std::string& rest) {
    httplib::Client c("127.0.0.1", port);
    c.set_read_timeout(30, 0);
    return c.Get("/api/datasets/" + id + rest);
  }
};

}  // namespace

TEST(RemoteCache, ServesTheCachedProductsWithoutTheRawData) {
  CacheServer srv;
  httplib::Client c("127.0.0.1", srv.port);
  auto res = c.Get("/api/datasets");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  const auto list = nlohmann::json::parse(res->body)["datasets"];
  ASSERT_EQ(list.size(), 1u);
  EXPECT_EQ(list[0]["representation"], "product cache");
  EXPECT_EQ(list[0]["shape"], nlohmann::json({8, 8, 32, 32}));

  res = srv.get("/virtual?kind=bf&format=u64");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  EXPECT_EQ(as_vector<std::uint64_t>(res->body), detector::bf(srv.ds).counts("test").data);
  res = srv.get("/virtual?kind=adf&inner=8&outer=14&format=u64");
  ASSERT_EQ(res->status, 200) << res->body;
  EXPECT_EQ(as_vector<std::uint64_t>(res->body), detector::adf(srv.ds, 8, 14).counts("test").data);
  // scan-binned from the cache: the cached image's 2 x 2 block sums, the answer's shape and provenance say 4 x 4
  res = srv.get("/virtual?kind=bf&format=json&scan_bin=2");
  ASSERT_EQ(res->status, 200) << res->body;
  const nlohmann::json binned = nlohmann::json::parse(res->body);
  EXPECT_EQ(binned["rows"], 4);
  EXPECT_EQ(binned["provenance"]["output_shape"], nlohmann::json({4, 4}));
  EXPECT_EQ(binned["provenance"]["parameters"]["scan_bin"], 2);
  const auto full = detector::bf(srv.ds).counts("test").data;
  for (std::size_t i = 0; i < 16; ++i) {
    const std::size_t r = i / 4 * 2, c = i % 4 * 2;
    EXPECT_EQ(binned["data"][i].get<std::uint64_t>(),
              full[r * 8 + c] + full[r * 8 + c + 1] + full[(r + 1) * 8 + c] + full[(r + 1) * 8 + c + 1]) << i;
  }
  EXPECT_EQ(srv.get("/com?format=f32&scan_bin=2")->status, 404);  // a binned CoM needs the raw data

  res = srv.get("/mean_pattern?format=f32");
  ASSERT_EQ(res->status, 200) << res->body;
  EXPECT_EQ(as_vector<float>(res->body), detector::mean_pattern(srv.ds).data);
  res = srv.get("/disk_fit");
  const detector::DiskFit fit = detector::fit_bf_disk(srv.ds);
  const nlohmann::json disk = nlohmann::json::parse(res->body);
  EXPECT_EQ(disk["radius"].get<double>(), fit.radius);
  EXPECT_EQ(disk["confidence"].get<double>(), fit.confidence);  // the cache's record of the fit
  EXPECT_EQ(disk["method"], fit.method);
  EXPECT_EQ(disk["confident"], fit.confident());

  const dpc::ComResult com = dpc::center_of_mass(srv.ds);
  res = srv.get("/com?format=f32");
  ASSERT_EQ(res->status, 200) << res->body;
  std::vector<float> want = com.com_row.data;
  want.insert(want.end(), com.com_col.data.begin(), com.com_col.data.end());
  EXPECT_EQ(as_vector<float>(res->body), want);
  const dpc::DpcResult d = dpc::centered_dpc(com);
  const dpc::RotationResult rot = dpc::calibrate_rotation(d);
  auto [fr, fc] = dpc::rotate_field(d, rot.angle_deg, rot.transpose);
  res = srv.get("/idpc?format=f32");
  ASSERT_EQ(res->status, 200) << res->body;
  const std::vector<float> phase = as_vector<float>(res->body), ref = dpc::idpc(fr, fc).data;
  ASSERT_EQ(phase.size(), ref.size());
  for (std::size_t i = 0; i < ref.size(); ++i) EXPECT_NEAR(phase[i], ref[i], 1e-6);
  res = srv.get("/dpc?format=f32&rotation=30&transpose=1");  // another rotation, from the cached centred DPC
  ASSERT_EQ(res->status, 200) << res->body;
  auto [gr, gc] = dpc::rotate_field(d, 30, true);
  EXPECT_EQ(as_vector<float>(res->body).at(5), gr.data.at(5));
}

TEST(RemoteCache, RawOnlyRequestsAreNamed404) {
  CacheServer srv;
  for (const char* rest : {"/frame?row=1&col=1", "/window?rows=2&cols=2", "/browse_plan"}) {
    auto res = srv.get(rest);
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 404) << rest;
    EXPECT_NE(res->body.find("needs the raw data"), std::string::npos) << res->body;
  }
  auto res = srv.get("/virtual?kind=disk&r=3");
  EXPECT_EQ(res->status, 404);
  EXPECT_NE(res->body.find("virtual detector disk of radius 3"), std::string::npos) << res->body;
  EXPECT_NE(res->body.find("cached detectors: abf adf adf_8_14 bf"), std::string::npos) << res->body;
  httplib::Client c("127.0.0.1", srv.port);
  res = c.Post("/api/datasets/" + srv.id + "/virtual", R"({"weights": [1]})", "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 404);
}

TEST(RemoteCache, ViewerRoundedDetectorsMatchWithinTheTolerance) {
  CacheServer srv;
  const detector::DiskFit fit = detector::fit_bf_disk(srv.ds);
  char q[160];
  auto r2 = [](double x) { return std::round(x * 100) / 100; };
  std::snprintf(q, sizeof q, "/virtual?kind=disk&cr=%.2f&cc=%.2f&r=%.2f&format=u64", r2(fit.center_row),
                r2(fit.center_col), r2(fit.radius));
  auto res = srv.get(q);
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 404) << "rounded values matched without a tolerance";
  res = srv.get(std::string(q) + "&tolerance=0.01");
  ASSERT_EQ(res->status, 200) << res->body;
  EXPECT_EQ(res->get_header_value("X-Cached-Product"), "bf");
  EXPECT_EQ(as_vector<std::uint64_t>(res->body), detector::bf(srv.ds).counts("test").data);
  std::string json_query = q;
  json_query.replace(json_query.find("format=u64"), 10, "format=json");
  res = srv.get(json_query + "&tolerance=0.01");
  ASSERT_EQ(res->status, 200) << res->body;
  const auto j = nlohmann::json::parse(res->body);
  EXPECT_EQ(j["provenance"]["parameters"]["cache"]["detector"]["radius"].get<double>(), fit.radius);
  res = srv.get(std::string(q) + "&tolerance=1");
  EXPECT_EQ(res->status, 400);
}
