// On a GPU: a cuda-resident dataset is served with the same exact answers as the cpu reference.
#include <gtest/gtest.h>

#include <cstring>

#include "detector/virtual_detector.hpp"
#include "service_fixture.hpp"
#include "support/cuda_required.hpp"

using namespace qgpu;

TEST(RemoteCuda, VirtualImageEqualsCpuReference) {
  QGPU_REQUIRE_CUDA();
  io::LoadOptions o;
  o.backend = "cuda";
  const Dataset gpu = io::load(test::remote_sample_path(), o);
  test::RunningServer srv({}, gpu);
  auto res = srv.client().Get(srv.api("/virtual?kind=annulus&cr=16&cc=16&inner=6&outer=15&format=u64"));
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  const auto want = detector::adf(test::load_cpu(test::remote_sample_path()), 6, 15, detector::Center{16, 16}).data;
  ASSERT_EQ(res->body.size(), want.size() * 8);
  EXPECT_EQ(std::memcmp(res->body.data(), want.data(), res->body.size()), 0);
  res = srv.client().Get(srv.api("/window?rows=2&cols=3"));
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  res = srv.client().Get("/api/datasets");
  ASSERT_TRUE(res);
  EXPECT_NE(res->body.find("\"residency\":\"gpu\""), std::string::npos);
}

TEST(RemoteCuda, DatasetsGoRoundRobinOverDevices) {
  QGPU_REQUIRE_CUDA();
  const int last = detect().device_count - 1;
  remote::CatalogOptions o;
  o.backend = "cuda";
  o.devices = {0, last};
  const std::string p = test::remote_sample_path();
  remote::Catalog c = remote::load_catalog({p, p, p}, o);
  ASSERT_EQ(c.all().size(), 3u);
  EXPECT_EQ(c.all()[0]->device, 0);
  EXPECT_EQ(c.all()[1]->device, last);
  EXPECT_EQ(c.all()[2]->device, 0);
  const auto want = detector::bf(test::load_cpu(p), 6.0, detector::Center{16, 16}).data;
  for (const auto& s : c.all()) {
    double ms = 0;
    const auto got = remote::run_on(*s, [](remote::ServedDataset& d) {
      return detector::bf(d.ds, 6.0, detector::Center{16, 16}).data;
    }, ms);
    EXPECT_EQ(got, want) << s->id << " on device " << s->device;
  }
}
