// A cache lacking a field reports it by name; files that are not caches or of a newer format are refused; a
// changed source (size, mtime, content) is detected and named.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "cache/cache.hpp"
#include "cache_fixtures.hpp"

using namespace qgpu;

namespace {

std::string built_cache(std::string& source, const sample::SampleSpec& spec = test::small_cache_spec()) {
  source = test::temp_path("source.h5");
  sample::write_sample(source, spec);
  const std::string out = test::temp_path("products.h5");
  cache::build(test::load_cpu(source), out);
  return out;
}

template <class F> std::string error_of(F&& f) {
  try {
    f();
  } catch (const cache::ProductUnavailable& e) {
    return e.what();
  }
  return "no ProductUnavailable";
}

bool mentions(const std::vector<std::string>& lines, const std::string& word) {
  for (const auto& l : lines)
    if (l.find(word) != std::string::npos) return true;
  return false;
}

}  // namespace

TEST(CacheMissing, RemovedProductIsNamedNotDefaulted) {
  std::string source;
  const std::string path = built_cache(source);
  test::remove_object(path, "/virtual/adf");
  test::remove_object(path, "/geometry");
  const cache::Cache c = cache::open(path);
  EXPECT_FALSE(c.has("adf"));
  EXPECT_TRUE(c.has("bf"));
  const std::string msg = error_of([&] { c.u64("adf"); });
  EXPECT_NE(msg.find("product 'adf' is not available"), std::string::npos) << msg;
  EXPECT_NE(msg.find("it holds:"), std::string::npos) << msg;
  EXPECT_NE(error_of([&] { c.geometry(); }).find("no geometry"), std::string::npos);
  EXPECT_NE(error_of([&] { c.provenance("adf"); }).find("'adf'"), std::string::npos);
  EXPECT_THROW(c.f32("bf"), DTypeError);  // bf is uint64: never converted silently
}

TEST(CacheMissing, ProductNotMadeRecordsWhy) {
  // A bright-field disk of radius 14 on a 32 x 32 detector leaves no room for the 1.2R..3R annulus.
  sample::SampleSpec spec = test::small_cache_spec();
  spec.det_rows = spec.det_cols = 32;
  spec.disk_radius_px = 14;
  std::string source;
  const cache::Cache c = cache::open(built_cache(source, spec));
  EXPECT_TRUE(c.has("bf"));
  EXPECT_FALSE(c.has("adf"));
  const std::string msg = error_of([&] { c.u64("adf"); });
  EXPECT_NE(msg.find("not made when it was built: no room for an annulus"), std::string::npos) << msg;
}

TEST(CacheOpen, RefusesFilesThatAreNotCaches) {
  std::string source;
  const std::string path = built_cache(source);
  EXPECT_TRUE(cache::is_cache_file(path));
  EXPECT_FALSE(cache::is_cache_file(source));
  EXPECT_FALSE(cache::is_cache_file(path + ".absent"));
  EXPECT_THROW(cache::open(source), FormatError);
  EXPECT_THROW(cache::open(path + ".absent"), IoError);
  // A newer format version than this build reads.
  const hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  ASSERT_GE(f, 0);
  const hid_t a = H5Aopen(f, "cache_format_version", H5P_DEFAULT);
  const std::int32_t v = 2;
  H5Awrite(a, H5T_NATIVE_INT32, &v);
  H5Aclose(a);
  H5Fclose(f);
  try {
    cache::open(path);
    FAIL() << "a version 2 cache was opened";
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("cache_format_version 2"), std::string::npos) << e.what();
  }
}

TEST(CacheStale, FreshWhenUnchanged) {
  std::string source;
  const cache::Cache c = cache::open(built_cache(source));
  EXPECT_TRUE(c.source_present());
  EXPECT_TRUE(c.stale().empty());
  EXPECT_EQ(c.source().at("path"), std::filesystem::absolute(source).lexically_normal().string());
  EXPECT_EQ(c.source().at("files")[0].at("size").get<std::uint64_t>(), std::filesystem::file_size(source));
  EXPECT_EQ(c.source().at("files")[0].at("hash").get<std::string>().size(), 64u);
}

TEST(CacheStale, TouchedSourceNamesTheMtime) {
  std::string source;
  const std::string path = built_cache(source);
  std::filesystem::last_write_time(source, std::filesystem::last_write_time(source) + std::chrono::seconds(5));
  const cache::Cache c = cache::open(path);
  ASSERT_EQ(c.stale().size(), 1u);
  EXPECT_NE(c.stale()[0].find("mtime_ns"), std::string::npos) << c.stale()[0];
  try {
    cache::open(path, {.require_fresh = true});
    FAIL() << "a stale cache was opened with require_fresh";
  } catch (const cache::StaleCache& e) {
    EXPECT_NE(std::string(e.what()).find("is stale"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find(source), std::string::npos);
  }
}

TEST(CacheStale, ModifiedContentIsDetectedEvenWithSizeAndMtimeKept) {
  std::string source;
  const std::string path = built_cache(source);
  const auto mtime = std::filesystem::last_write_time(source);
  const auto size = std::filesystem::file_size(source);
  {
    std::fstream f(source, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(size - 3));
    f.put('\x5a');
  }
  std::filesystem::last_write_time(source, mtime);
  const cache::Cache c = cache::open(path);
  ASSERT_EQ(c.stale().size(), 1u);
  EXPECT_NE(c.stale()[0].find("content hash differs"), std::string::npos) << c.stale()[0];
}

TEST(CacheStale, GrownSourceNamesTheSize) {
  std::string source;
  const std::string path = built_cache(source);
  const auto size = std::filesystem::file_size(source);
  std::ofstream(source, std::ios::app | std::ios::binary) << "more";
  const cache::Cache c = cache::open(path);
  EXPECT_TRUE(mentions(c.stale(), "size " + std::to_string(size) + " -> " + std::to_string(size + 4)));
  EXPECT_TRUE(mentions(c.stale(), "content hash differs"));
}

TEST(CacheStale, AbsentSourceIsNotAnError) {
  std::string source;
  const std::string path = built_cache(source);
  std::filesystem::remove(source);
  const cache::Cache c = cache::open(path, {.require_fresh = true});
  EXPECT_FALSE(c.source_present());
  EXPECT_TRUE(c.stale().empty());
  EXPECT_TRUE(c.has("idpc"));  // the products are read without the raw data
}

TEST(CacheStale, ChangedDataFileOfAnAcquisitionIsNamed) {
  const std::string master = test::temp_path("scan_master.h5");
  const std::vector<std::string> parts = sample::write_sample_acquisition(master, test::small_cache_spec(), 2);
  ASSERT_EQ(parts.size(), 2u);
  const std::string path = test::temp_path("products.h5");
  cache::build(test::load_cpu(master), path);
  const cache::Cache fresh = cache::open(path);
  EXPECT_EQ(fresh.source().at("files").size(), 3u);  // the master and both data files
  EXPECT_TRUE(fresh.stale().empty());
  std::ofstream(parts[1], std::ios::app | std::ios::binary) << "x";
  const cache::Cache c = cache::open(path);
  EXPECT_TRUE(mentions(c.stale(), "source file '" + std::filesystem::absolute(parts[1]).lexically_normal().string() +
                                      "' size"));
  EXPECT_FALSE(mentions(c.stale(), "scan_master.h5"));
}

TEST(CacheBuild, RefusesToOverwriteItsSource) {
  const std::string source = test::temp_path("source.h5");
  sample::write_sample(source, test::small_cache_spec());
  const auto size = std::filesystem::file_size(source);
  EXPECT_THROW(cache::build(test::load_cpu(source), source), InvalidArgument);
  EXPECT_EQ(std::filesystem::file_size(source), size);
  EXPECT_FALSE(cache::is_cache_file(source));
}

TEST(CacheBuild, BadExtraDetectorsAreRefusedBeforeAnyWork) {
  const std::string source = test::temp_path("source.h5");
  sample::write_sample(source, test::small_cache_spec());
  const Dataset ds = test::load_cpu(source);
  const std::string out = test::temp_path("products.h5");
  auto refused = [&](cache::BuildOptions o, const std::string& words) {
    try {
      cache::build(ds, out, o);
      ADD_FAILURE() << "accepted: " << words;
    } catch (const InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
    }
    EXPECT_FALSE(std::filesystem::exists(out));
  };
  refused({.bf_radii = {-1}}, "radius must be > 0, got -1");
  refused({.bf_radii = {5, 5}}, "radius 5 given twice");
  refused({.adf_ranges = {{20, 10}}}, "0 <= inner < outer, got 20..10");
  refused({.adf_ranges = {{2, 4}, {2, 4}}}, "annulus 2..4 given twice");
}

TEST(CacheOpen, ProductLargerThanItsStorageIsRefused) {
  std::string source;
  const std::string path = built_cache(source);
  test::remove_object(path, "/virtual/bf");
  {  // a 10^5 x 10^5 uint64 dataset that was never written (80 GB declared, nothing stored)
    const hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    ASSERT_GE(f, 0);
    const hsize_t dims[2] = {100000, 100000};
    const hid_t space = H5Screate_simple(2, dims, nullptr);
    const hid_t d = H5Dcreate2(f, "/virtual/bf", H5T_STD_U64LE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    ASSERT_GE(d, 0);
    H5Dclose(d);
    H5Sclose(space);
    H5Fclose(f);
  }
  try {
    cache::open(path);
    FAIL() << "an unwritten 80 GB product was accepted";
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("'bf' declares 100000 x 100000 values but the file holds fewer"),
              std::string::npos) << e.what();
  }
}
