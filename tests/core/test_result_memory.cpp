// Host result memory used again (core/result_memory.hpp): a large vector given back is what the next result of its
// size gets (the same memory), other sizes and small vectors get fresh zeroed ones, at most kKeptResults stay per
// value type, and QGPU_RECYCLE_RESULTS=0 keeps none.
#include <gtest/gtest.h>

#include <cstdlib>

#include "core/result_memory.hpp"

namespace qgpu {
namespace {

constexpr std::size_t kValues = (kRecycleFromBytes / sizeof(std::uint64_t)) + 7;  // just over the threshold

TEST(ResultMemory, AGivenBackVectorIsTheNextResultOfItsSize) {
  while (kept_result_values<std::uint64_t>() > 0) (void)result_vector<std::uint64_t>(kValues);
  std::vector<std::uint64_t> a = result_vector<std::uint64_t>(kValues);
  ASSERT_EQ(a.size(), kValues);
  EXPECT_EQ(a[0], 0u);  // a fresh one is zeroed
  a[5] = 42;
  const std::uint64_t* memory = a.data();
  recycle_result(std::move(a));
  EXPECT_EQ(kept_result_values<std::uint64_t>(), kValues);
  const std::vector<std::uint64_t> other = result_vector<std::uint64_t>(kValues + 1);  // another size: fresh
  EXPECT_NE(other.data(), memory);
  EXPECT_EQ(other[5], 0u);
  const std::vector<std::uint64_t> b = result_vector<std::uint64_t>(kValues);
  EXPECT_EQ(b.data(), memory) << "the same memory, its pages present";
  EXPECT_EQ(b.size(), kValues);
  EXPECT_EQ(kept_result_values<std::uint64_t>(), 0u);
  std::vector<float> f = result_vector<float>(kValues);  // another value type: its own list
  EXPECT_EQ(kept_result_values<float>() % kValues, 0u);
  recycle_result(std::move(f));
  EXPECT_EQ(kept_result_values<std::uint64_t>(), 0u);
  (void)result_vector<float>(kValues);
}

TEST(ResultMemory, SmallVectorsAreNotKeptAndAtMostEightAre) {
  while (kept_result_values<std::uint64_t>() > 0) (void)result_vector<std::uint64_t>(kValues);
  recycle_result(std::vector<std::uint64_t>(1000, 1));
  EXPECT_EQ(kept_result_values<std::uint64_t>(), 0u);
  for (std::size_t i = 0; i < kKeptResults + 2; ++i) recycle_result(std::vector<std::uint64_t>(kValues, 1));
  EXPECT_EQ(kept_result_values<std::uint64_t>(), kKeptResults * kValues);
  setenv("QGPU_RECYCLE_RESULTS", "0", 1);
  recycle_result(std::vector<std::uint64_t>(kValues + 3, 1));
  unsetenv("QGPU_RECYCLE_RESULTS");
  EXPECT_EQ(kept_result_values<std::uint64_t>(), kKeptResults * kValues) << "QGPU_RECYCLE_RESULTS=0 keeps none";
  while (kept_result_values<std::uint64_t>() > 0) (void)result_vector<std::uint64_t>(kValues);
  // the bytes are capped too: 1 GiB per value type, the oldest dropped
  const std::size_t big = (kKeptResultBytes / 3) / sizeof(std::uint64_t);
  for (int i = 0; i < 4; ++i) recycle_result(std::vector<std::uint64_t>(big));
  EXPECT_EQ(kept_result_values<std::uint64_t>(), 3 * big);
  recycle_result(std::vector<std::uint64_t>(kKeptResultBytes / sizeof(std::uint64_t) + 1));  // larger than the cap
  EXPECT_EQ(kept_result_values<std::uint64_t>(), 3 * big);
  while (kept_result_values<std::uint64_t>() > 0) (void)result_vector<std::uint64_t>(big);
}

}  // namespace
}  // namespace qgpu
