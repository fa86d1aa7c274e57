// detector::pixel_chunks (the host side of the chunked encoded gather, detector/cuda/pixel_chunks.hpp) against a
// brute-force check of its contract on CSR lists with groups of 1..9 pixels.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "core/error.hpp"
#include "detector/cuda/pixel_chunks.hpp"

namespace qgpu::detector {
namespace {

std::vector<std::uint32_t> offsets_of(const std::vector<std::uint32_t>& sizes) {
  std::vector<std::uint32_t> o{0};
  for (std::uint32_t s : sizes) o.push_back(o.back() + s);
  return o;
}

TEST(PixelChunks, WholeGroupsWhereTheyFitPartsOtherwise) {
  const std::vector<std::uint32_t> off = offsets_of({4, 4, 9, 1, 3});  // 0 4 8 17 18 21
  // 8 pixels: [0, 8) = groups 0-1 whole; group 2 (9 pixels) has no boundary inside (8, 16]: split at 16; the rest
  // [16, 21) fits: the end of group 2 and groups 3-4.
  const std::vector<PixelChunk> c = pixel_chunks(off, 0, 5, 8);
  ASSERT_EQ(c.size(), 3u);
  EXPECT_EQ(c[0].a, 0u);
  EXPECT_EQ(c[0].b, 8u);
  EXPECT_EQ(c[0].ga, 0u);
  EXPECT_EQ(c[0].gb, 2u);
  EXPECT_EQ(c[1].a, 8u);
  EXPECT_EQ(c[1].b, 16u);
  EXPECT_EQ(c[1].ga, 2u);
  EXPECT_EQ(c[1].gb, 3u);
  EXPECT_EQ(c[2].a, 16u);
  EXPECT_EQ(c[2].b, 21u);
  EXPECT_EQ(c[2].ga, 2u);
  EXPECT_EQ(c[2].gb, 5u);
  // 6 pixels: [0, 4) (the last boundary inside (0, 6]), [4, 8), [8, 14) (part of group 2), [14, 18) (the last
  // boundary inside (14, 20] is 18, not 17), [18, 21).
  const std::vector<PixelChunk> six = pixel_chunks(off, 0, 5, 6);
  ASSERT_EQ(six.size(), 5u);
  const std::size_t ends[] = {4, 8, 14, 18, 21};
  for (std::size_t i = 0; i < 5; ++i) EXPECT_EQ(six[i].b, ends[i]) << i;
  // Large enough: one chunk; a sub-range of groups starts at its own first pixel.
  const std::vector<PixelChunk> one = pixel_chunks(off, 0, 5, 100);
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].b, 21u);
  const std::vector<PixelChunk> sub = pixel_chunks(off, 2, 2, 100);
  ASSERT_EQ(sub.size(), 1u);
  EXPECT_EQ(sub[0].a, 8u);
  EXPECT_EQ(sub[0].b, 18u);
  EXPECT_EQ(sub[0].ga, 2u);
  EXPECT_EQ(sub[0].gb, 4u);
}

// The contract for every chunk bound 1..25 and every window of groups: the chunks tile [off[g0], off[g0 + count))
// in order, each has 1..max pixels, [ga, gb) are exactly the groups with a pixel in [a, b), and a chunk that does
// not reach the window's end ends on a group boundary whenever one lies in (a, a + max].
TEST(PixelChunks, ContractOverEveryBoundAndWindow) {
  const std::vector<std::uint32_t> sizes{1, 9, 2, 2, 7, 1, 1, 5, 3, 8, 4, 6};
  const std::vector<std::uint32_t> off = offsets_of(sizes);
  const std::size_t groups = sizes.size();
  const auto group_of = [&](std::size_t k) {
    std::size_t g = 0;
    while (off[g + 1] <= k) ++g;
    return g;
  };
  for (std::size_t max = 1; max <= 25; ++max)
    for (std::size_t g0 = 0; g0 < groups; ++g0)
      for (std::size_t count = 0; g0 + count <= groups; ++count) {
        const std::vector<PixelChunk> c = pixel_chunks(off, g0, count, max);
        std::size_t k = off[g0];
        for (const PixelChunk& ch : c) {
          ASSERT_EQ(ch.a, k);
          ASSERT_GT(ch.b, ch.a);
          ASSERT_LE(ch.b - ch.a, max);
          ASSERT_EQ(ch.ga, group_of(ch.a));
          ASSERT_EQ(ch.gb, group_of(ch.b - 1) + 1);
          if (ch.b < off[g0 + count]) {
            bool boundary_inside = false;
            for (std::size_t g = g0 + 1; g < g0 + count; ++g) boundary_inside |= off[g] > ch.a && off[g] <= ch.a + max;
            bool ends_on_boundary = false;
            for (std::size_t g = g0 + 1; g < g0 + count; ++g) ends_on_boundary |= off[g] == ch.b;
            ASSERT_EQ(ends_on_boundary, boundary_inside) << "max " << max << " g0 " << g0 << " count " << count;
          }
          k = ch.b;
        }
        ASSERT_EQ(k, off[g0 + count]) << "max " << max << " g0 " << g0 << " count " << count;
      }
}

TEST(PixelChunks, BadArgumentsRaiseInvalidArgument) {
  const std::vector<std::uint32_t> off = offsets_of({2, 3});
  EXPECT_THROW(pixel_chunks(off, 0, 2, 0), InvalidArgument);
  EXPECT_THROW(pixel_chunks(off, 1, 2, 4), InvalidArgument);
  EXPECT_THROW(pixel_chunks(off, 3, 0, 4), InvalidArgument);
  EXPECT_THROW(pixel_chunks({}, 0, 0, 4), InvalidArgument);
  EXPECT_TRUE(pixel_chunks(off, 2, 0, 4).empty());
}

}  // namespace
}  // namespace qgpu::detector
