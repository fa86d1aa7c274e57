// Every output goes through a temporary file beside the target, renamed over it only when the target is absent
// or a regular file (issue 25, point 5): a FIFO, socket, directory or device node as output is an error naming
// it, and it is still there, unchanged, afterwards. Exercised through the writers (npy, PNG, JSON, samples).
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "core/atomic_output.hpp"
#include "core/error.hpp"
#include "display/png.hpp"
#include "io/npy/npy.hpp"
#include "io/sample/sample.hpp"
#include "support/expect_error.hpp"
#include "support/special_files.hpp"
#include "support/temp_files.hpp"

using namespace qgpu;
namespace fs = std::filesystem;

namespace {

// A fresh folder for one test, so that leftover temporaries can be counted.
fs::path fresh_dir(const std::string& name) {
  const fs::path d = test::temp_path(name);
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

std::size_t entries(const fs::path& d) {
  std::size_t n = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(d)) ++n;
  return n;
}

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

void write_small_npy(const std::string& path) { io::write_npy(path, {1, 2}, std::vector<std::uint64_t>{7, 9}); }

void write_small_png(const std::string& path) {
  display::Rgba img;
  img.rows = img.cols = 2;
  img.rgba.assign(16, 200);
  display::write_png(path, img);
}

// A writer of each kind, on `path`.
const std::vector<std::pair<std::string, std::function<void(const std::string&)>>>& writers() {
  static const std::vector<std::pair<std::string, std::function<void(const std::string&)>>> w = {
      {"npy", write_small_npy},
      {"png", write_small_png},
      {"json", [](const std::string& p) { write_file_atomically(p, std::string_view("{}\n"), "JSON output"); }},
      {"sample", [](const std::string& p) {
         sample::SampleSpec s;
         s.scan_rows = s.scan_cols = 2;
         s.det_rows = s.det_cols = 8;
         s.threads = 1;
         sample::write_sample(p, s);
       }}};
  return w;
}

}  // namespace

TEST(AtomicOutput, FifoAsOutputIsRefusedAndStaysAFifo) {
  const fs::path dir = fresh_dir("fifo");
  const std::string fifo = (dir / "out").string();
  for (const auto& [kind, write] : writers()) {
    ASSERT_TRUE(test::make_fifo(fifo));
    // A reader holds the other end, so that a writer that opens the FIFO does not block (it used to: the npy,
    // PNG and JSON writers opened it; the sample writer truncated it).
    const int reader = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK);
    ASSERT_GE(reader, 0);
    bool refused = false;
    std::string message;
    const bool in_time = test::finishes_within(20, [&] {
      try {
        write(fifo);
      } catch (const IoError& e) {
        refused = true;
        message = e.what();
      }
    }, fifo);
    ::close(reader);
    EXPECT_TRUE(in_time) << kind;
    EXPECT_TRUE(refused) << kind << ": writing to a FIFO was not refused";
    EXPECT_NE(message.find("'" + fifo + "' is a named pipe (FIFO), not a regular file"), std::string::npos)
        << kind << ": " << message;
    EXPECT_EQ(test::type_at(fifo), fs::file_type::fifo) << kind;
    EXPECT_EQ(entries(dir), 1u) << kind << ": a temporary file was left behind";
  }
}

TEST(AtomicOutput, SocketAndDirectoryAsOutputAreRefusedAndKept) {
  const fs::path dir = fresh_dir("socket");
  const std::string sock = (dir / "out.sock").string(), sub = (dir / "sub").string();
  fs::create_directories(sub);
  for (const auto& [kind, write] : writers()) {
    ASSERT_TRUE(test::make_socket(sock));
    test::expect_error<IoError>([&] { write(sock); }, {"'" + sock + "' is a socket, not a regular file"});
    EXPECT_EQ(test::type_at(sock), fs::file_type::socket) << kind;
    test::expect_error<IoError>([&] { write(sub); }, {"'" + sub + "' is a directory, not a regular file"});
    EXPECT_EQ(test::type_at(sub), fs::file_type::directory) << kind;
    EXPECT_EQ(entries(dir), 2u) << kind;
  }
}

// A character device with the null device's numbers, made in the test folder (root only; skipped elsewhere).
// Before the fix the writers wrote into it without an error, or replaced it with a regular file.
TEST(AtomicOutput, DeviceNodeAsOutputIsRefusedAndStaysADevice) {
  const fs::path dir = fresh_dir("device");
  const std::string node = (dir / "null").string();
  if (!test::make_null_device_node(node)) GTEST_SKIP() << "cannot create a device node here (needs CAP_MKNOD)";
  for (const auto& [kind, write] : writers()) {
    test::expect_error<IoError>([&] { write(node); }, {"'" + node + "' is a character device, not a regular file"});
    struct stat st {};
    ASSERT_EQ(::lstat(node.c_str(), &st), 0) << kind;
    EXPECT_TRUE(S_ISCHR(st.st_mode)) << kind;
    EXPECT_EQ(st.st_rdev, makedev(1, 3)) << kind;
    EXPECT_EQ(entries(dir), 1u) << kind;
  }
  test::remove_path(node);
}

TEST(AtomicOutput, SymlinkToADeviceIsRefusedSymlinkToAFileIsFollowed) {
  const fs::path dir = fresh_dir("links");
  const std::string fifo = (dir / "fifo").string(), to_fifo = (dir / "to_fifo.npy").string();
  ASSERT_TRUE(test::make_fifo(fifo));
  fs::create_symlink(fifo, to_fifo);
  test::expect_error<IoError>([&] { write_small_npy(to_fifo); },
                              {"'" + to_fifo + "' is a symbolic link to a named pipe (FIFO)", "not a regular file"});
  EXPECT_EQ(test::type_at(fifo), fs::file_type::fifo);
  EXPECT_EQ(test::type_at(to_fifo), fs::file_type::symlink);

  const std::string dangling = (dir / "dangling.npy").string();
  fs::create_symlink(dir / "missing" / "x.npy", dangling);
  test::expect_error<IoError>([&] { write_small_npy(dangling); }, {"is a symbolic link to a missing file"});

  const std::string real = (dir / "real.npy").string(), link = (dir / "link.npy").string();
  std::ofstream(real) << "old";
  fs::create_symlink(real, link);
  write_small_npy(link);
  EXPECT_EQ(test::type_at(link), fs::file_type::symlink);  // the link is kept, the file it names replaced
  EXPECT_EQ(slurp(real).substr(1, 5), "NUMPY");
  EXPECT_EQ(entries(dir), 5u);  // fifo, to_fifo, dangling, real, link: no temporaries
}

TEST(AtomicOutput, RegularFileIsReplacedWholeAndAFailedWriteLeavesIt) {
  const fs::path dir = fresh_dir("regular");
  const std::string out = (dir / "out.json").string();
  std::ofstream(out) << "old content";
  write_file_atomically(out, std::string_view("{\"new\": 1}\n"));
  EXPECT_EQ(slurp(out), "{\"new\": 1}\n");
  EXPECT_THROW(write_file_atomically(out, [](std::FILE* f) {
                 std::fputs("half", f);
                 throw FormatError("the writer failed");
               }),
               FormatError);
  EXPECT_EQ(slurp(out), "{\"new\": 1}\n");  // untouched
  EXPECT_EQ(entries(dir), 1u);              // and no temporary left
  test::expect_error<IoError>([&] { write_small_npy((dir / "no_such_folder" / "x.npy").string()); },
                              {"npy output '" + (dir / "no_such_folder" / "x.npy").string() + "': its folder '" +
                                   (dir / "no_such_folder").string() + "' does not exist"});
}

TEST(AtomicOutput, SampleAcquisitionRefusesAFifoDataFileBeforeReplacingIt) {
  const fs::path dir = fresh_dir("acquisition");
  const std::string master = (dir / "scan_master.h5").string(), data1 = (dir / "scan_data_000001.h5").string();
  ASSERT_TRUE(test::make_fifo(data1));
  sample::SampleSpec s;
  s.scan_rows = s.scan_cols = 2;
  s.det_rows = s.det_cols = 8;
  test::expect_error<IoError>([&] { sample::write_sample_acquisition(master, s, 2); },
                              {"sample data file '" + data1 + "' is a named pipe (FIFO)"});
  EXPECT_EQ(test::type_at(data1), fs::file_type::fifo);
  EXPECT_FALSE(fs::exists(master));  // the master is only renamed into place once complete
  EXPECT_EQ(entries(dir), 1u);
}
