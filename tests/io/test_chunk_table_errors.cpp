// Chunk table failures: datasets without a chunk index, missing files, and corrupt indexes (every byte the parser
// reads of a checksummed index flipped in turn; deterministic damage to unchecksummed version 1 B-trees) give
// FormatError (or, for a version byte, Unsupported), never a crash, hang or silently wrong table.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "support/expect_error.hpp"
#include "chunk_files.hpp"
#include "core/error.hpp"
#include "io/hdf5/index/dataset_location.hpp"
#include "support/temp_files.hpp"

using namespace qgpu;
using qgpu::test::expect_error;
using io::h5index::ByteSource;
using io::h5index::MemoryByteSource;
using test::ChunkedSpec;

namespace {

constexpr hsize_t U = H5S_UNLIMITED;

std::vector<std::uint8_t> file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

io::h5index::ParseRequest request_for(const std::string& path, const std::string& dset) {
  hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  hid_t ds = H5Dopen2(f, dset.c_str(), H5P_DEFAULT);
  const auto loc = io::h5index::locate_dataset(ds);
  H5Dclose(ds);
  H5Fclose(f);
  return loc.request;
}

// A memory source that remembers every range the parser read.
class RecordingSource final : public ByteSource {
 public:
  explicit RecordingSource(const std::vector<std::uint8_t>& b) : mem_(b.data(), b.size()) {}
  std::uint64_t size() const override { return mem_.size(); }
  mutable std::vector<std::pair<std::uint64_t, std::uint64_t>> ranges;

 private:
  void read_into(std::uint64_t offset, void* dst, std::size_t n) const override {
    ranges.emplace_back(offset, n);
    const auto b = mem_.read(offset, n, "test");
    std::memcpy(dst, b.data(), n);
  }
  MemoryByteSource mem_;
};

// 0 = parsed, 1 = FormatError, 2 = Unsupported.
int parse_outcome(const std::vector<std::uint8_t>& bytes, const io::h5index::ParseRequest& req) {
  MemoryByteSource src(bytes.data(), bytes.size());
  try {
    io::h5index::parse_chunk_index(src, req);
    return 0;
  } catch (const FormatError&) {
    return 1;
  } catch (const io::h5index::Unsupported&) {
    return 2;
  }
}

// Flips bytes across every range the parser reads (up to `per_range` evenly spaced ones each); every flip must
// be detected. Returns how many flips were tried.
int flip_everything_read(const std::string& path, const std::string& dset, int per_range) {
  const auto req = request_for(path, dset);
  std::vector<std::uint8_t> bytes = file_bytes(path);
  RecordingSource rec(bytes);
  const auto clean = io::h5index::parse_chunk_index(rec, req);
  EXPECT_FALSE(clean.chunks.empty());
  int tried = 0;
  for (const auto& [off, n] : rec.ranges) {
    const std::uint64_t step = std::max<std::uint64_t>(1, n / per_range);
    for (std::uint64_t k = 0; k < n; k += step) {
      bytes[off + k] ^= 0xA5;
      EXPECT_NE(parse_outcome(bytes, req), 0) << "flip at byte " << off + k << " of range " << off << "+" << n;
      bytes[off + k] ^= 0xA5;
      ++tried;
    }
  }
  return tried;
}

ChunkedSpec v110(ChunkedSpec s) {
  s.low = H5F_LIBVER_V110;
  s.high = H5F_LIBVER_V110;
  return s;
}

}  // namespace

TEST(ChunkTableErrors, NotChunked) {
  const std::string path = test::temp_path("contig.h5");
  hid_t f = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  hsize_t dims[2] = {4, 4};
  hid_t sp = H5Screate_simple(2, dims, nullptr);
  H5Dclose(H5Dcreate2(f, "/contig", H5T_STD_U16LE, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
  hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
  H5Pset_layout(dcpl, H5D_COMPACT);
  H5Dclose(H5Dcreate2(f, "/compact", H5T_STD_U16LE, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT));
  H5Pclose(dcpl);
  H5Sclose(sp);
  H5Fclose(f);
  expect_error<FormatError>([&] { io::read_chunk_table(path, "/contig"); }, {"/contig", "not chunked", "contiguous"});
  expect_error<FormatError>([&] { io::read_chunk_table(path, "/compact"); }, {"/compact", "not chunked", "compact"});
  // The byte-level parser says the same from the layout message.
  EXPECT_EQ(parse_outcome(file_bytes(path), request_for(path, "/contig")), 1);
  EXPECT_EQ(parse_outcome(file_bytes(path), request_for(path, "/compact")), 1);
}

TEST(ChunkTableErrors, MissingFileOrDataset) {
  expect_error<IoError>([] { io::read_chunk_table("/nonexistent/x.h5", "/data"); }, {"/nonexistent/x.h5"});
  ChunkedSpec s;
  s.dims = {4, 4};
  s.chunk = {2, 2};
  const std::string path = test::temp_path("small.h5");
  test::write_chunked(path, s);
  expect_error<IoError>([&] { io::read_chunk_table(path, "/nothing"); }, {"/nothing", "not found"});
}

TEST(ChunkTableErrors, EveryFlipInCheckedIndexesIsDetected) {
  struct Case {
    const char* name;
    ChunkedSpec spec;
  };
  std::vector<Case> cases;
  ChunkedSpec fa = v110({});
  fa.dims = {2100, 4, 4};
  fa.chunk = {1, 4, 4};
  fa.deflate = true;
  cases.push_back({"fa.h5", fa});
  ChunkedSpec ea = v110({});
  ea.dims = {600, 4, 4};
  ea.max_dims = {U, 4, 4};
  ea.chunk = {1, 4, 4};
  ea.deflate = true;
  cases.push_back({"ea.h5", ea});
  ChunkedSpec bt2 = v110({});
  bt2.dims = {60, 60};
  bt2.max_dims = {U, U};
  bt2.chunk = {2, 2};
  cases.push_back({"bt2.h5", bt2});
  for (const auto& c : cases) {
    const std::string path = test::temp_path(c.name);
    test::write_chunked(path, c.spec);
    EXPECT_GT(flip_everything_read(path, c.spec.name, 48), 100) << c.name;
  }
}

TEST(ChunkTableErrors, DamagedVersion1Btree) {
  ChunkedSpec s;
  s.dims = {300, 4, 4};
  s.max_dims = {U, 4, 4};
  s.chunk = {1, 4, 4};
  const std::string path = test::temp_path("bt1.h5");
  test::write_chunked(path, s);
  const auto req = request_for(path, s.name);
  const std::vector<std::uint8_t> clean = file_bytes(path);
  ASSERT_EQ(parse_outcome(clean, req), 0);
  // The chunk B-tree root: the type-1 "TREE" node of the highest level.
  std::size_t root = 0;
  int root_level = -1;
  for (std::size_t i = 0; i + 8 < clean.size(); ++i)
    if (std::memcmp(&clean[i], "TREE", 4) == 0 && clean[i + 4] == 1 && clean[i + 5] > root_level) {
      root = i;
      root_level = clean[i + 5];
    }
  ASSERT_GE(root_level, 1) << "300 chunks need a two-level tree";
  const std::size_t key_bytes = 8 + 8 * 4;
  auto damaged = [&](const std::function<void(std::vector<std::uint8_t>&)>& edit) {
    std::vector<std::uint8_t> b = clean;
    edit(b);
    return parse_outcome(b, req);
  };
  EXPECT_EQ(damaged([&](auto& b) { b[root] = 'X'; }), 1);                    // signature
  EXPECT_EQ(damaged([&](auto& b) { b[root + 4] = 0; }), 1);                  // node type
  EXPECT_EQ(damaged([&](auto& b) { b[root + 6] = b[root + 7] = 0xff; }), 1); // entries beyond the file
  EXPECT_EQ(damaged([&](auto& b) {                                           // child 0 points back at the root
              for (int k = 0; k < 8; ++k) b[root + 24 + key_bytes + k] = static_cast<std::uint8_t>(root >> (8 * k));
            }), 1);
  EXPECT_EQ(damaged([&](auto& b) { b.resize(root + 30); }), 1);               // truncated inside the index
  // Through the public call on a damaged file on disk: the message names the dataset and the file.
  std::vector<std::uint8_t> b = clean;
  b[root + 24 + key_bytes] ^= 0x40;  // child pointer into the wrong place
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(b.data()), b.size());
  expect_error<FormatError>([&] { io::read_chunk_table(path, s.name); }, {"/data", path});
}

TEST(ChunkTableErrors, TooManyChunksForATable) {  // a huge (empty) extent must not allocate gigabytes
  ChunkedSpec s = v110({});
  s.dims = {hsize_t(1) << 27, 2};
  s.max_dims = {U, 2};
  s.chunk = {1, 2};
  s.written = [](std::uint64_t) { return false; };
  const std::string path = test::temp_path("huge.h5");
  test::write_chunked(path, s);
  expect_error<FormatError>([&] { io::read_chunk_table(path, s.name); }, {"/data", "134217728 chunks", "more than"});
}
