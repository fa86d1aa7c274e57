// Parameter parsing and the frame-window / browse-plan arithmetic, without HTTP.
#include <gtest/gtest.h>

#include "remote/frame_window.hpp"
#include "remote/http_error.hpp"
#include "remote/params.hpp"

using namespace qgpu;
using namespace qgpu::remote;

TEST(RemoteParams, NumbersAreStrict) {
  const QueryParams q = {{"a", "1.5"}, {"b", "nan"}, {"c", "3x"}, {"d", "-2"}, {"e", ""}, {"f", "1e400"}};
  const Params p(q);
  EXPECT_EQ(p.number("a").value(), 1.5);
  EXPECT_THROW(p.number("b"), HttpError);
  EXPECT_THROW(p.number("c"), HttpError);
  EXPECT_THROW(p.non_negative("d"), HttpError);
  EXPECT_THROW(p.number("e"), HttpError);
  EXPECT_THROW(p.number("f"), HttpError);
  EXPECT_FALSE(p.number("zzz").has_value());
  EXPECT_THROW(p.index("d"), HttpError);
  EXPECT_THROW(p.index("a"), HttpError);
  EXPECT_THROW(p.required_index("zzz"), HttpError);
}

TEST(RemoteWindow, ExactBinsAndBytes) {
  EXPECT_EQ(exact_bins(12, 18), (std::vector<std::size_t>{1, 2, 3, 6}));
  const Shape4D s{4, 6, 12, 18};
  EXPECT_EQ(window_bytes(s, 2, 3, 3), 2u * 3u * 4u * 6u * 4u);
  EXPECT_EQ(window_bytes(s, 2, 3, 4), 0u);
  const auto plan = browse_plan(s, "uint16", 1000);
  EXPECT_EQ(plan["detector_bins"], nlohmann::json({1, 2, 3, 6}));
  EXPECT_EQ(plan["scan_bins"], nlohmann::json({1, 2}));
  EXPECT_EQ(plan["options"].size(), 8u);
  EXPECT_EQ(plan["options"][0]["bytes"], 4 * 6 * 12 * 18 * 4);
  EXPECT_FALSE(plan["options"][0]["fits_window"].get<bool>());
}
