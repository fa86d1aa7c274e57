#include <gtest/gtest.h>

#include "core/error.hpp"
#include "detector/mask.hpp"
#include "detector/plan.hpp"

using namespace qgpu;
using namespace qgpu::detector;

TEST(Mask, DiskCountsPixelCentres) {
  // radius 1 around an integer centre: the centre and its 4 neighbours.
  const Mask m = disk(9, 9, 4, 4, 1.0);
  EXPECT_EQ(m.nonzero(), 5u);
  EXPECT_EQ(m.weights[4 * 9 + 4], 1u);
  EXPECT_EQ(m.weights[3 * 9 + 4], 1u);
  EXPECT_EQ(m.weights[3 * 9 + 3], 0u);
  // radius 2: 13 pixels (lattice points with r^2 + c^2 <= 4).
  EXPECT_EQ(disk(9, 9, 4, 4, 2.0).nonzero(), 13u);
  EXPECT_EQ(m.description.at("kind"), "disk");
}

TEST(Mask, AnnulusIsDiskMinusInnerDisk) {
  const Mask a = annulus(32, 32, 15.5, 15.5, 4.0, 10.0);
  const Mask outer = disk(32, 32, 15.5, 15.5, 10.0);
  std::size_t expected = 0;
  for (std::size_t r = 0; r < 32; ++r)
    for (std::size_t c = 0; c < 32; ++c) {
      const double d2 = (r - 15.5) * (r - 15.5) + (c - 15.5) * (c - 15.5);
      expected += (d2 >= 16.0 && d2 <= 100.0);
    }
  EXPECT_EQ(a.nonzero(), expected);
  EXPECT_LT(a.nonzero(), outer.nonzero());
}

TEST(Mask, BadGeometryIsRejected) {
  EXPECT_THROW(disk(16, 16, 100, 100, 3), InvalidArgument);  // covers no pixel
  EXPECT_THROW(annulus(16, 16, 8, 8, 5, 2), InvalidArgument);
  EXPECT_THROW(disk(16, 16, 8, 8, -1), InvalidArgument);
  EXPECT_THROW(disk(16, 16, std::nan(""), 8, 2), InvalidArgument);
  EXPECT_THROW(from_weights(4, 4, std::vector<std::uint32_t>(15, 1)), InvalidArgument);
  EXPECT_THROW(from_weights(4, 4, std::vector<std::uint32_t>(16, 0)), InvalidArgument);
}

TEST(Plan, ChoosesTheCheapestExactStrategy) {
  const SumPlan small = plan_masked_sum(disk(32, 32, 16, 16, 5));
  EXPECT_EQ(small.strategy, Strategy::sparse);
  EXPECT_EQ(small.offsets.size(), disk(32, 32, 16, 16, 5).nonzero());
  const SumPlan big = plan_masked_sum(annulus(32, 32, 16, 16, 3, 100));
  EXPECT_EQ(big.strategy, Strategy::complement);
  EXPECT_EQ(big.offsets.size(), 32u * 32u - annulus(32, 32, 16, 16, 3, 100).nonzero());
  EXPECT_EQ(big.uniform_weight, 1u);
  std::vector<std::uint32_t> w(32 * 32, 2);
  w[5] = 3;
  const SumPlan dense = plan_masked_sum(from_weights(32, 32, w));
  EXPECT_EQ(dense.strategy, Strategy::dense);
}
