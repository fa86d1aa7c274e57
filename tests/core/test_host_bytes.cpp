// core/host_bytes.hpp: fresh_vector's values are zero at every size (below and above one huge page).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/host_bytes.hpp"

namespace qgpu {
namespace {

TEST(HostBytes, FreshVectorsAreZeroAtEverySize) {
  for (std::size_t n : {std::size_t(0), std::size_t(1), std::size_t(1) << 20, (std::size_t(3) << 20) + 7}) {
    const std::vector<std::uint64_t> v = fresh_vector<std::uint64_t>(n);  // 24 MiB + 56 B
    ASSERT_EQ(v.size(), n);
    EXPECT_TRUE(std::all_of(v.begin(), v.end(), [](std::uint64_t x) { return x == 0; })) << n;
  }
}

}  // namespace
}  // namespace qgpu
