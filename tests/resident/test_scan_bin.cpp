// bin_scan_sums (resident/scan_bin.hpp): b x b block sums of a per-position product, against a direct sum per block.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "core/error.hpp"
#include "resident/scan_bin.hpp"

namespace qgpu {
namespace {

// Sizes whose output rows span several blocks of the host loop (kHostBlock input values per block) and sizes of one;
// integers are exact, floats keep the bits of a row-major pass (each block sum adds its rows in order).
TEST(ScanBin, BlockSumsEqualADirectSumPerBlock) {
  struct Case {
    std::size_t rows, cols, b;
  };
  for (const Case c : {Case{6, 9, 3}, Case{512, 768, 2}, Case{1024, 1024, 8}, Case{300, 200, 5}}) {
    SCOPED_TRACE(std::to_string(c.rows) + "x" + std::to_string(c.cols) + " bin " + std::to_string(c.b));
    std::vector<std::uint64_t> v(c.rows * c.cols);
    std::vector<float> f(v.size());
    for (std::size_t i = 0; i < v.size(); ++i) {
      v[i] = (i * 2654435761u) % 100003 + (std::uint64_t{1} << 40);
      f[i] = 0.1f * float(i % 977) + 1e-3f * float(i % 13);
    }
    const auto bv = bin_scan_sums(v, c.rows, c.cols, c.b);
    const auto bf = bin_scan_sums(f, c.rows, c.cols, c.b);
    const std::size_t orows = c.rows / c.b, ocols = c.cols / c.b;
    ASSERT_EQ(bv.size(), orows * ocols);
    ASSERT_EQ(bf.size(), orows * ocols);
    for (std::size_t R = 0; R < orows; ++R)
      for (std::size_t C = 0; C < ocols; ++C) {
        std::uint64_t s = 0;
        float sf = 0;
        for (std::size_t r = R * c.b; r < R * c.b + c.b; ++r)
          for (std::size_t col = C * c.b; col < C * c.b + c.b; ++col) {
            s += v[r * c.cols + col];
            sf += f[r * c.cols + col];
          }
        ASSERT_EQ(bv[R * ocols + C], s) << R << "," << C;
        ASSERT_EQ(bf[R * ocols + C], sf) << R << "," << C;
      }
  }
}

TEST(ScanBin, BinOneKeepsTheValuesAndAWrongBinOrSizeIsRefused) {
  const std::vector<std::uint64_t> v = {1, 2, 3, 4, 5, 6};
  EXPECT_EQ(bin_scan_sums(v, 2, 3, 1), v);
  EXPECT_THROW(bin_scan_sums(v, 2, 3, 2), InvalidArgument);  // 2 does not divide 3
  EXPECT_THROW(bin_scan_sums(v, 2, 3, 0), InvalidArgument);
  EXPECT_THROW(bin_scan_sums(v, 3, 3, 3), InvalidArgument);  // 6 values for a 3x3 scan
}

}  // namespace
}  // namespace qgpu
