// core/stage_timing: stages recorded per thread, exclusive when nested, and the Server-Timing header text.
#include <gtest/gtest.h>

#include <thread>

#include "core/stage_timing.hpp"

namespace qgpu::timing {
namespace {

double sum(const std::vector<std::pair<std::string, double>>& stages) {
  double s = 0;
  for (const auto& [n, ms] : stages) s += ms;
  return s;
}

TEST(StageTiming, StagesWithoutARecordingAreIgnored) {
  { const Stage s("compute"); }  // no recording on this thread: nothing to charge, no crash
  Recording r;
  EXPECT_TRUE(r.stages().empty());
}

TEST(StageTiming, StagesAreNamedInOrderOfFirstUseAndAccumulate) {
  Recording r;
  { const Stage s("transfer"); }
  { const Stage s("compute"); }
  { const Stage s("transfer"); }
  const auto st = r.stages();
  ASSERT_EQ(st.size(), 2u);
  EXPECT_EQ(st[0].first, "transfer");
  EXPECT_EQ(st[1].first, "compute");
  for (const auto& [n, ms] : st) EXPECT_GE(ms, 0.0) << n;
  EXPECT_LE(sum(st), r.elapsed_ms());
}

TEST(StageTiming, NestedStagesAreExclusiveAndAddUpToAtMostTheWallTime) {
  Recording r;
  {
    const Stage outer("compute");
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    {
      const Stage inner("transfer");
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }
  const double wall = r.elapsed_ms();
  const auto st = r.stages();
  ASSERT_EQ(st.size(), 2u);
  EXPECT_EQ(st[0].first, "compute");
  EXPECT_EQ(st[1].first, "transfer");
  // Each slept at least 2 ms in its own stage; exclusive, so together they never exceed the wall time (an
  // inclusive outer stage would count the inner sleep twice).
  EXPECT_GE(st[0].second, 2.0);
  EXPECT_GE(st[1].second, 2.0);
  EXPECT_LE(st[0].second + st[1].second, wall);
}

TEST(StageTiming, AnOpenStageIsChargedUpToNow) {
  Recording r;
  const Stage s("render");
  std::this_thread::sleep_for(std::chrono::milliseconds(1));
  const auto st = r.stages();
  ASSERT_EQ(st.size(), 1u);
  EXPECT_EQ(st[0].first, "render");
  EXPECT_GE(st[0].second, 1.0);
}

TEST(StageTiming, RecordingsArePerThreadAndAnInnerOneHidesTheOuter) {
  Recording outer;
  std::thread([] { const Stage s("compute"); }).join();  // another thread: not recorded here
  EXPECT_TRUE(outer.stages().empty());
  {
    Recording inner;
    { const Stage s("encode"); }
    ASSERT_EQ(inner.stages().size(), 1u);
  }
  EXPECT_TRUE(outer.stages().empty());
  { const Stage s("compute"); }  // the outer one records again once the inner has ended
  ASSERT_EQ(outer.stages().size(), 1u);
  EXPECT_EQ(outer.stages()[0].first, "compute");
}

TEST(StageTiming, ServerTimingHeaderNamesEveryStageTheRestAndTheTotal) {
  EXPECT_EQ(server_timing({{"compute", 1.25}, {"transfer", 0.5}}, 2.0),
            "compute;dur=1.250, transfer;dur=0.500, other;dur=0.250, total;dur=2.000");
  EXPECT_EQ(server_timing({{"compute", 2.0}}, 2.0), "compute;dur=2.000, total;dur=2.000");  // nothing left over
  EXPECT_EQ(server_timing({}, 0.1234), "other;dur=0.123, total;dur=0.123");
}

}  // namespace
}  // namespace qgpu::timing
