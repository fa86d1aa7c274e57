// The dataset's cache of derived data (Dataset::cached / set_cached / forget_cached / forget_all_cached): one slot per
// type, shared by copies of the dataset; forget_all_cached empties every slot (what the service does after a live
// acquisition writes frames: the cuda/vulkan frame totals an ADF subtracts from must not outlive the counts).
#include <gtest/gtest.h>

#include "resident/dataset.hpp"

namespace qgpu {
namespace {

struct Totals {
  int value;
};
struct Fit {
  double radius;
};

Dataset small() {
  HostArray4D a;
  a.shape = {2, 3, 4, 5};
  a.dtype = DType::u16;
  a.bytes = HostBytes(a.shape.elements() * 2);
  return Dataset::from_host(std::move(a), nlohmann::json::object(), Provenance{});
}

TEST(DatasetCache, SlotsPerTypeSharedByCopiesAndForgottenTogether) {
  const Dataset ds = small();
  EXPECT_EQ(ds.cached<Totals>(), nullptr);
  ds.set_cached(std::make_shared<const Totals>(Totals{7}));
  ds.set_cached(std::make_shared<const Fit>(Fit{12.5}));
  const Dataset copy = ds;  // the same resident: the same cache
  ASSERT_NE(copy.cached<Totals>(), nullptr);
  EXPECT_EQ(copy.cached<Totals>()->value, 7);
  EXPECT_EQ(copy.cached<Fit>()->radius, 12.5);
  ds.forget_cached<Fit>();
  EXPECT_EQ(copy.cached<Fit>(), nullptr);
  EXPECT_EQ(copy.cached<Totals>()->value, 7);
  ds.set_cached(std::make_shared<const Fit>(Fit{3.0}));
  copy.forget_all_cached();
  EXPECT_EQ(ds.cached<Totals>(), nullptr);
  EXPECT_EQ(ds.cached<Fit>(), nullptr);
}

}  // namespace
}  // namespace qgpu
