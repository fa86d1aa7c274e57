// On a GPU: a cuda-resident dataset is served with the same exact answers as the cpu reference.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "detector/virtual_detector.hpp"
#include "dpc/com.hpp"
#include "dpc/idpc.hpp"
#include "dpc/rotation.hpp"
#include "service_fixture.hpp"
#include "ssb/ssb.hpp"
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
  const auto want = detector::adf(test::load_cpu(test::remote_sample_path()), 6, 15, detector::Center{16, 16}).counts("test").data;
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
  const auto want = detector::bf(test::load_cpu(p), 6.0, detector::Center{16, 16}).counts("test").data;
  for (const auto& s : c.all()) {
    double ms = 0;
    const auto got = remote::run_on(*s, [](remote::ServedDataset& d) {
      return detector::bf(d.ds, 6.0, detector::Center{16, 16}).counts("test").data;
    }, ms);
    EXPECT_EQ(got, want) << s->id << " on device " << s->device;
  }
}

namespace {

std::vector<float> floats_of(const std::string& body) {
  std::vector<float> v(body.size() / sizeof(float));
  std::memcpy(v.data(), body.data(), v.size() * sizeof(float));
  return v;
}

double relative_l2(const std::vector<float>& a, const std::vector<float>& b) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    num += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
    den += double(b[i]) * b[i];
  }
  return std::sqrt(num / den);
}

}  // namespace

// The interactive products of a cuda dataset (iDPC with GPU padding and pooled buffers; the SSB slider at bin 1,
// whose G the service now keeps on a GPU) against the library: iDPC within 1e-5 of the CPU chain (the CoM is bit
// for bit the CPU's, dpc tests), each SSB step bit for bit a fresh ssb::reconstruct on the same cuda dataset.
TEST(RemoteCuda, IdpcAndFullSsbSliderEqualTheLibrary) {
  QGPU_REQUIRE_CUDA();
  io::LoadOptions o;
  o.backend = "cuda";
  const Dataset gpu = io::load(test::remote_sample_path(), o);
  test::RunningServer srv({}, gpu);
  auto cli = srv.client();

  const Dataset cpu = test::load_cpu(test::remote_sample_path());
  const dpc::DpcResult d = dpc::centered_dpc(dpc::center_of_mass(cpu));
  const auto [gr, gc] = dpc::rotate_field(d, 10, false);
  const std::vector<float> want_idpc = dpc::idpc(gr, gc).data;
  for (int round = 0; round < 2; ++round) {
    auto res = cli.Get(srv.api("/idpc?format=f32&rotation=10"));
    ASSERT_TRUE(res);
    ASSERT_EQ(res->status, 200) << res->body;
    const std::vector<float> got = floats_of(res->body);
    ASSERT_EQ(got.size(), want_idpc.size());
    EXPECT_LE(relative_l2(got, want_idpc), 1e-5) << "round " << round;
  }

  bool first = true;
  for (double c1 : {40.0, -90.0, 40.0}) {
    auto res = cli.Get(srv.api("/ssb?format=f32&bin=1&defocus=" + std::to_string(c1)));
    ASSERT_TRUE(res);
    ASSERT_EQ(res->status, 200) << res->body;
    ssb::SsbParams p = ssb::params_from_metadata(gpu);
    p.aberrations.C1 = c1;
    EXPECT_EQ(floats_of(res->body), ssb::reconstruct(gpu, p).phase.data) << "C1 " << c1;
    // G is built on the first request only (the prepare stage); the next steps reuse it.
    EXPECT_EQ(res->get_header_value("Server-Timing").find("prepare") != std::string::npos, first)
        << res->get_header_value("Server-Timing");
    first = false;
  }
}
