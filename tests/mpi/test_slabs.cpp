// The MPI row split: contiguous slabs in rank order covering every row once, sizes differing by at most one.
#include <gtest/gtest.h>

#include "core/error.hpp"
#include "mpi/slabs.hpp"
#include "mpi/split_run.hpp"

namespace qgpu::mpi {

TEST(Slabs, RowsThatDivide) {
  const std::vector<Slab> s = split_rows(12, 3);
  ASSERT_EQ(s.size(), 3u);
  for (std::size_t r = 0; r < 3; ++r) {
    EXPECT_EQ(s[r].row0, 4 * r);
    EXPECT_EQ(s[r].rows, 4u);
  }
}

TEST(Slabs, RowsThatDoNotDivideGoToTheFirstRanks) {
  const std::vector<Slab> s = split_rows(10, 3);
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s[0].row0, 0u);
  EXPECT_EQ(s[0].rows, 4u);
  EXPECT_EQ(s[1].row0, 4u);
  EXPECT_EQ(s[1].rows, 3u);
  EXPECT_EQ(s[2].row0, 7u);
  EXPECT_EQ(s[2].rows, 3u);
}

TEST(Slabs, EveryRowOnceForManyShapes) {
  for (std::size_t rows = 1; rows < 70; ++rows)
    for (int ranks = 1; ranks <= int(rows) && ranks <= 9; ++ranks) {
      const std::vector<Slab> s = split_rows(rows, ranks);
      std::size_t next = 0, smallest = rows, largest = 0;
      for (const Slab& x : s) {
        EXPECT_EQ(x.row0, next);
        next += x.rows;
        smallest = std::min(smallest, x.rows);
        largest = std::max(largest, x.rows);
      }
      EXPECT_EQ(next, rows);
      EXPECT_GE(smallest, 1u);
      EXPECT_LE(largest - smallest, 1u);
    }
}

TEST(Slabs, TooFewRowsOrNoRanksAreRefused) {
  EXPECT_THROW(split_rows(2, 3), InvalidArgument);
  EXPECT_THROW(split_rows(5, 0), InvalidArgument);
  try {
    split_rows(2, 3);
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("2 rows"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("3 MPI ranks"), std::string::npos) << e.what();
  }
}

TEST(Slabs, DescribedForProvenance) {
  const nlohmann::json j = describe_slabs(split_rows(10, 3));
  EXPECT_EQ(j["ranks"], 3);
  EXPECT_EQ(j["slabs"], nlohmann::json::parse("[[0,4],[4,3],[7,3]]"));
}

}  // namespace qgpu::mpi
