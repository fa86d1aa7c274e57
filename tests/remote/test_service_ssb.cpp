// GET ssb / ssb_fit: the service's answers equal the library's on the same dataset (cpu backend; vulkan where a
// Vulkan device is usable: lavapipe here and in CI).
#include <gtest/gtest.h>

#include <cstring>

#include <nlohmann/json.hpp>

#include "service_fixture.hpp"
#include "ssb/ssb.hpp"
#include "support/gpu_backends.hpp"

using namespace qgpu;

namespace {

using test::floats;

}  // namespace

TEST(RemoteSsb, PreviewPhaseAtAGivenDefocusEqualsTheLibrary) {
  test::RunningServer srv;
  auto res = srv.client().Get(srv.api("/ssb?defocus=120&bin=2&format=f32"));
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  EXPECT_EQ(res->get_header_value("X-Shape"), "8,8");
  EXPECT_EQ(res->get_header_value("X-DType"), "float32");
  ssb::SsbParams p = ssb::params_from_metadata(srv.dataset());
  p.aberrations.C1 = 120;
  EXPECT_EQ(floats(res->body), ssb::preview(srv.dataset(), p, 2).phase.data);
}

TEST(RemoteSsb, BinOneIsTheFullReconstructionAndAmplitudeIsServed) {
  test::RunningServer srv;
  auto res = srv.client().Get(srv.api("/ssb?bin=1&component=amplitude&format=f32"));
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  const ssb::SsbParams p = ssb::params_from_metadata(srv.dataset());  // the file's nominal defocus
  EXPECT_EQ(floats(res->body), ssb::reconstruct(srv.dataset(), p).amplitude.data);
}

// The kept G(K, Q) (one bin at a time) gives each defocus and bin what a fresh preview gives.
TEST(RemoteSsb, SuccessiveDefociAndBinsEqualFreshPreviews) {
  test::RunningServer srv;
  std::vector<float> first;
  for (const auto& [defocus, bin] : std::vector<std::pair<double, int>>{{0, 4}, {300, 4}, {-120, 2}, {300, 4}}) {
    auto res = srv.client().Get(srv.api("/ssb?format=f32&defocus=" + std::to_string(defocus) + "&bin=" + std::to_string(bin)));
    ASSERT_TRUE(res);
    ASSERT_EQ(res->status, 200) << res->body;
    ssb::SsbParams p = ssb::params_from_metadata(srv.dataset());
    p.aberrations.C1 = defocus;
    EXPECT_EQ(floats(res->body), ssb::preview(srv.dataset(), p, std::size_t(bin)).phase.data) << defocus << " " << bin;
    if (first.empty()) first = floats(res->body);
    else if (defocus != 0) EXPECT_NE(floats(res->body), first);
  }
}

// scan_bin=b: the library's Reconstructor::at(ab, b) on the (8/b) x (8/b) grid, detector bin 4 kept and 1 not.
TEST(RemoteSsb, ScanBinnedSliderEqualsTheLibrary) {
  test::RunningServer srv;
  ssb::SsbParams p = ssb::params_from_metadata(srv.dataset());
  p.aberrations.C1 = 80;
  for (int bin : {4, 1}) {
    auto res = srv.client().Get(srv.api("/ssb?format=f32&defocus=80&scan_bin=2&bin=" + std::to_string(bin)));
    ASSERT_TRUE(res);
    ASSERT_EQ(res->status, 200) << res->body;
    EXPECT_EQ(res->get_header_value("X-Shape"), "4,4");
    EXPECT_EQ(floats(res->body), ssb::Reconstructor(srv.dataset(), p, std::size_t(bin)).at(p.aberrations, 2).phase.data);
  }
  auto res = srv.client().Get(srv.api("/ssb?format=f32&scan_bin=3"));
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 400) << res->body;
}

// A vulkan dataset: the full reconstruction (G kept on the device between requests) equals the library's on that
// dataset bit for bit, and the CPU reference's within SsbGpu's 1e-4 rad; the fit runs there too.
TEST(RemoteSsb, VulkanDatasetAnswersTheLibraryAndTheReference) {
  QGPU_REQUIRE_BACKEND(Backend::vulkan);
  const Dataset host = test::load_cpu(test::remote_sample_path());
  test::RunningServer srv({}, host.to_vulkan());
  ASSERT_EQ(srv.dataset().backend(), Backend::vulkan);
  const ssb::SsbParams p = ssb::params_from_metadata(host);
  const std::vector<float> cpu = ssb::reconstruct(host, p).phase.data, lib = ssb::reconstruct(srv.dataset(), p).phase.data;
  for (int round = 0; round < 2; ++round) {
    auto res = srv.client().Get(srv.api("/ssb?bin=1&format=f32"));
    ASSERT_TRUE(res);
    ASSERT_EQ(res->status, 200) << res->body;
    const std::vector<float> got = floats(res->body);
    EXPECT_EQ(got, lib);
    ASSERT_EQ(got.size(), cpu.size());
    for (std::size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], cpu[i], 1e-4) << i;
  }
  auto fit = srv.client().Get(srv.api("/ssb_fit?trials=12&c1_min=-200&c1_max=200&bin=2"));
  ASSERT_TRUE(fit);
  ASSERT_EQ(fit->status, 200) << fit->body;
  const double c1 = nlohmann::json::parse(fit->body)["defocus_angstrom"].get<double>();
  EXPECT_GE(c1, -200);
  EXPECT_LE(c1, 200);
}

TEST(RemoteSsb, FitAnswersTheLibraryDefocus) {
  test::RunningServer srv;
  auto res = srv.client().Get(srv.api("/ssb_fit?trials=24&c1_min=-200&c1_max=200&bin=2"));
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  const auto j = nlohmann::json::parse(res->body);
  ssb::FitOptions o;
  o.trials = 24;
  o.c1_min = -200;
  o.c1_max = 200;
  o.detector_bin = 2;
  const ssb::FitResult f = ssb::fit(srv.dataset(), ssb::params_from_metadata(srv.dataset()), o);
  EXPECT_DOUBLE_EQ(j["defocus_angstrom"].get<double>(), f.aberrations.C1);
  EXPECT_EQ(j["trials"].get<std::size_t>(), f.loss_trace.size());
  EXPECT_GE(j["defocus_angstrom"].get<double>(), -200);
  EXPECT_LE(j["defocus_angstrom"].get<double>(), 200);
}

// The defocus bound is ssb::resolve_params's (as the CLI's and Python's), named as the query parameter.
TEST(RemoteSsb, DefocusOutOfRangeIsNamed) {
  test::RunningServer srv;
  auto res = srv.client().Get(srv.api("/ssb?defocus=-2e6"));
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 400);
  EXPECT_EQ(nlohmann::json::parse(res->body).at("error").get<std::string>(),
            "parameter 'defocus' must be within +-1e+06 angstrom, got -2e+06");
}

TEST(RemoteSsb, BadParametersAre400) {
  test::RunningServer srv;
  for (const char* q : {"/ssb?bin=0", "/ssb?bin=65", "/ssb?defocus=abc", "/ssb?defocus=1e9", "/ssb?component=x",
                        "/ssb_fit?trials=2", "/ssb_fit?trials=99999", "/ssb_fit?c1_min=5&c1_max=-5"}) {
    auto res = srv.client().Get(srv.api(q));
    ASSERT_TRUE(res) << q;
    EXPECT_EQ(res->status, 400) << q << ": " << res->body;
    EXPECT_TRUE(nlohmann::json::parse(res->body).contains("error")) << q;
  }
}
