#include <gtest/gtest.h>
#include "cache/cache_h5.hpp"
#include "support/temp_files.hpp"
using namespace qgpu;
TEST(CacheH5, LargeJsonAttributesRoundTrip) {
  const std::string path = test::temp_path("attrs.h5");
  std::string big(200000, 'x');
  for (std::size_t i = 0; i < big.size(); i += 7) big[i] = char('a' + i % 26);
  {
    h5::Handle f = cache::h5io::create_file(path);
    cache::h5io::write_string(f, "big", big);
    cache::h5io::write_string(f, "small", "ok");
  }
  h5::Handle f = h5::open_file(path);
  EXPECT_EQ(cache::h5io::read_string(f, "big", "test"), big);
  EXPECT_EQ(cache::h5io::read_string(f, "small", "test"), "ok");
  EXPECT_EQ(cache::h5io::attribute_names(f), (std::vector<std::string>{"big", "small"}));
}
