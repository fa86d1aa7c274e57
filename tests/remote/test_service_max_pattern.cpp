// GET max_pattern: the largest count of each detector pixel over the scan, against a frame-by-frame reference.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>

#include <nlohmann/json.hpp>

#include "remote/frame_window.hpp"
#include "service_fixture.hpp"

using namespace qgpu;

TEST(RemoteMaxPattern, EqualsTheMaximumOverEveryFrame) {
  test::RunningServer srv;
  auto res = srv.client().Get(srv.api("/max_pattern?format=f32"));
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  EXPECT_EQ(res->get_header_value("X-Shape"), "32,32");
  std::vector<float> got(res->body.size() / sizeof(float));
  std::memcpy(got.data(), res->body.data(), res->body.size());
  const Shape4D& sh = srv.dataset().shape();
  std::vector<std::uint32_t> want(sh.det_rows * sh.det_cols, 0);
  for (std::size_t r = 0; r < sh.scan_rows; ++r)
    for (std::size_t c = 0; c < sh.scan_cols; ++c) {
      const auto f = remote::read_frame_values(srv.dataset(), r, c).counts("test").data;
      for (std::size_t k = 0; k < f.size(); ++k) want[k] = std::uint32_t(std::max<std::uint64_t>(want[k], f[k]));
    }
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t k = 0; k < want.size(); ++k) ASSERT_EQ(got[k], float(want[k])) << "pixel " << k;
  EXPECT_GT(*std::max_element(want.begin(), want.end()), 0u);
  // Cached: a second request (png here) answers from the same pattern.
  auto png = srv.client().Get(srv.api("/max_pattern?format=png"));
  ASSERT_TRUE(png);
  EXPECT_EQ(png->status, 200);
  EXPECT_EQ(png->get_header_value("Content-Type"), "image/png");
}

TEST(RemoteMaxPattern, BadFormatIs400) {
  test::RunningServer srv;
  auto res = srv.client().Get(srv.api("/max_pattern?format=bmp"));
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 400);
}
