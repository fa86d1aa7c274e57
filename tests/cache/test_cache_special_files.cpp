// Special files around a product cache (issue 25): a `source` naming a FIFO, socket or device is reported as
// "not a regular file" at once (opening the FIFO blocked `info`, `image`, Python `cache.open` and `serve`
// forever), and a cache output (-o) onto a FIFO, socket, folder or device node is refused and left as it was
// (the old code renamed its temporary file over it: the null device, as root, became a regular file).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "cache/cache.hpp"
#include "cache/source_identity.hpp"
#include "cache_fixtures.hpp"
#include "support/expect_error.hpp"
#include "support/special_files.hpp"

using namespace qgpu;
namespace fs = std::filesystem;

namespace {

// A cache built from a fresh sample; `source` is the sample's path.
std::string cache_of_fresh_source(std::string& source) {
  source = test::temp_path("source.h5");
  test::remove_path(source);  // a FIFO or folder a previous run left there
  sample::write_sample(source, test::small_cache_spec());
  const std::string out = test::temp_path("products.h5");
  cache::build(test::load_cpu(source), out);
  return out;
}

// cache::open on a thread, bounded: the stale lines, or "HUNG" when it did not return within 10 s.
std::vector<std::string> stale_lines_bounded(const std::string& cache_path, const std::string& fifo) {
  std::vector<std::string> stale{"HUNG"};
  bool present = false;
  test::finishes_within(10, [&] {
    const cache::Cache c = cache::open(cache_path);
    stale = c.stale();
    present = c.source_present();
  }, fifo);
  if (stale != std::vector<std::string>{"HUNG"}) EXPECT_TRUE(present);
  return stale;
}

}  // namespace

TEST(CacheSourceSpecialFile, FifoSourceIsNotARegularFileWithoutWaiting) {
  std::string source;
  const std::string path = cache_of_fresh_source(source);
  ASSERT_TRUE(test::make_fifo(source));  // the recorded source path now names a FIFO
  const auto t0 = std::chrono::steady_clock::now();
  const std::vector<std::string> stale = stale_lines_bounded(path, source);
  ASSERT_EQ(stale.size(), 1u) << (stale.empty() ? "fresh" : stale[0]);
  EXPECT_EQ(stale[0], "source file '" + fs::absolute(source).lexically_normal().string() +
                          "' is not a regular file (a named pipe (FIFO))");
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 5.0);
  // strict open: the same line, as StaleCache
  EXPECT_TRUE(test::finishes_within(10, [&] {
    test::expect_error<cache::StaleCache>([&] { cache::open(path, {.require_fresh = true}); },
                                          {"is not a regular file (a named pipe (FIFO))"});
  }, source));
  EXPECT_EQ(test::type_at(source), fs::file_type::fifo);
}

TEST(CacheSourceSpecialFile, SocketAndDeviceSourcesAreNamed) {
  std::string source;
  const std::string path = cache_of_fresh_source(source);
  const std::string abs = fs::absolute(source).lexically_normal().string();
  ASSERT_TRUE(test::make_socket(source));
  std::vector<std::string> stale = stale_lines_bounded(path, "");
  ASSERT_EQ(stale.size(), 1u);
  EXPECT_EQ(stale[0], "source file '" + abs + "' is not a regular file (a socket)");
  if (test::make_null_device_node(source)) {  // root only
    stale = stale_lines_bounded(path, "");
    ASSERT_EQ(stale.size(), 1u);
    EXPECT_EQ(stale[0], "source file '" + abs + "' is not a regular file (a character device)");
  }
  test::remove_path(source);
  fs::create_directories(source);
  stale = stale_lines_bounded(path, "");
  ASSERT_EQ(stale.size(), 1u);
  EXPECT_EQ(stale[0], "source file '" + abs + "' is not a regular file (a directory)");
  test::expect_error<IoError>([&] { cache::identify_file(source); }, {"is not a regular file (a directory)"});
}

TEST(CacheOutputSpecialFile, FifoSocketFolderAndDeviceAreRefusedAndKept) {
  sample::SampleSpec spec = test::small_cache_spec();
  const std::string source = test::temp_path("source.h5");
  sample::write_sample(source, spec);
  const Dataset ds = test::load_cpu(source);
  const fs::path dir = test::temp_path("outputs");
  fs::remove_all(dir);
  fs::create_directories(dir);

  const std::string fifo = (dir / "fifo.h5").string(), sock = (dir / "sock.h5").string(),
                    folder = (dir / "folder.h5").string(), node = (dir / "null.h5").string();
  ASSERT_TRUE(test::make_fifo(fifo));
  ASSERT_TRUE(test::make_socket(sock));
  fs::create_directories(folder);
  const bool have_node = test::make_null_device_node(node);
  struct Case {
    std::string path, what;
    fs::file_type type;
  };
  std::vector<Case> cases = {{fifo, "a named pipe (FIFO)", fs::file_type::fifo},
                             {sock, "a socket", fs::file_type::socket},
                             {folder, "a directory", fs::file_type::directory}};
  if (have_node) cases.push_back({node, "a character device", fs::file_type::character});
  for (const Case& c : cases) {
    test::expect_error<IoError>([&] { cache::build(ds, c.path); },
                                {"cache output '" + c.path + "' is " + c.what + ", not a regular file"});
    EXPECT_EQ(test::type_at(c.path), c.type) << c.path;
  }
  if (have_node) {
    struct stat st {};
    ASSERT_EQ(::lstat(node.c_str(), &st), 0);
    EXPECT_EQ(st.st_rdev, makedev(1, 3));
  }
  std::size_t n = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir)) ++n;
  EXPECT_EQ(n, cases.size());  // no temporary left behind
  test::remove_path(node);  // no device node left in the test folder

  // A regular file (an older cache, say) is replaced whole.
  const std::string regular = (dir / "products.h5").string();
  { std::ofstream(regular) << "not yet a cache"; }
  const std::vector<std::string> names = cache::build(ds, regular);
  EXPECT_TRUE(cache::is_cache_file(regular));
  EXPECT_EQ(cache::open(regular).products().size(), names.size());
}
