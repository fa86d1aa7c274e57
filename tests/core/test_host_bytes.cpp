// core/host_bytes.hpp: fresh_vector's values are zero whatever path sized it (below and above the size whose pages
// are faulted in on threads first), and populate_on_threads leaves memory as it was, at any alignment.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/host_bytes.hpp"

namespace qgpu {
namespace {

TEST(HostBytes, FreshVectorsAreZeroAtEverySize) {
  for (std::size_t n : {std::size_t(0), std::size_t(1), std::size_t(1) << 20, (std::size_t(3) << 20) + 7}) {
    const std::vector<std::uint64_t> v = fresh_vector<std::uint64_t>(n);  // 24 MiB + 56 B: populated on threads
    ASSERT_EQ(v.size(), n);
    EXPECT_TRUE(std::all_of(v.begin(), v.end(), [](std::uint64_t x) { return x == 0; })) << n;
  }
}

TEST(HostBytes, PopulatingKeepsTheValues) {
  std::vector<std::uint32_t> v((std::size_t(5) << 20) + 3);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = std::uint32_t(i * 2654435761u);
  populate_on_threads(reinterpret_cast<char*>(v.data()) + 1, v.size() * 4 - 1);  // unaligned start, odd length
  populate_on_threads(v.data(), 0);
  for (std::size_t i = 0; i < v.size(); ++i) ASSERT_EQ(v[i], std::uint32_t(i * 2654435761u)) << i;
}

}  // namespace
}  // namespace qgpu
