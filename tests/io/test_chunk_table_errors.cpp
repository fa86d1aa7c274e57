// Chunk table failures: datasets without a chunk index, missing files, and corrupt indexes (every byte the parser
// reads of a checksummed index flipped in turn; deterministic damage to unchecksummed version 1 B-trees) give
// FormatError (or, for a version byte, Unsupported), never a crash, hang or silently wrong table.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>

#include "support/expect_error.hpp"
#include "chunk_files.hpp"
#include "core/error.hpp"
#include "io/hdf5/index/chunk_grid.hpp"
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
    {
      std::lock_guard<std::mutex> lock(mutex_);  // the parser may read from several threads
      ranges.emplace_back(offset, n);
    }
    const auto b = mem_.read(offset, n, "test");
    std::memcpy(dst, b.data(), n);
  }
  MemoryByteSource mem_;
  mutable std::mutex mutex_;
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

// ---- issue 25: keys out of order, short unfiltered chunks, chunks wider than the dataset.

namespace {

// "TREE" nodes of a version 1 chunk B-tree (type 1) at `level`, in file order.
std::vector<std::size_t> btree_v1_nodes(const std::vector<std::uint8_t>& b, int level) {
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i + 8 <= b.size(); ++i)
    if (std::memcmp(&b[i], "TREE", 4) == 0 && b[i + 4] == 1 && b[i + 5] == level) out.push_back(i);
  return out;
}

void swap_range(std::vector<std::uint8_t>& b, std::size_t a, std::size_t c, std::size_t n) {
  for (std::size_t k = 0; k < n; ++k) std::swap(b[a + k], b[c + k]);
}

}  // namespace

TEST(ChunkTableErrors, Version1BtreeKeysMustIncrease) {
  // Chunks inserted in a scrambled order into a tree of small nodes (K = 2: several levels): a valid tree is never
  // refused, and its table matches HDF5.
  ChunkedSpec s;
  s.dims = {97, 3, 4};
  s.chunk = {1, 3, 2};
  s.istore_k = 2;
  const std::string path = test::temp_path("bt1k2.h5");
  {
    hid_t f = test::create_file(path, s);
    hid_t ds = test::create_dataset(f, s);
    const std::vector<std::uint8_t> raw(3 * 2 * 2, 5);
    for (std::uint64_t n = 0; n < 194; ++n) {
      const std::uint64_t i = (n * 71) % 194;  // 71 is prime to 194: every chunk once, scrambled
      const auto off = test::chunk_offset(i, s.dims, s.chunk);
      ASSERT_GE(H5Dwrite_chunk(ds, H5P_DEFAULT, 0, off.data(), raw.size(), raw.data()), 0);
    }
    H5Dclose(ds);
    H5Fclose(f);
  }
  const io::ChunkTable t = io::read_chunk_table(path, s.name);
  test::expect_matches_hdf5(path, s.name, t, false);
  const auto req = request_for(path, s.name);
  const std::vector<std::uint8_t> clean = file_bytes(path);
  ASSERT_EQ(parse_outcome(clean, req), 0);
  const auto leaves = btree_v1_nodes(clean, 0), inner = btree_v1_nodes(clean, 1);
  ASSERT_GE(leaves.size(), 2u);
  ASSERT_GE(inner.size(), 1u);
  const std::size_t rank = 3, entry = 8 + 8 * (rank + 1) + 8;
  auto key = [&](std::size_t node, std::size_t i) { return node + 24 + i * entry; };
  auto outcome = [&](const std::function<void(std::vector<std::uint8_t>&)>& edit) {
    std::vector<std::uint8_t> b = clean;
    edit(b);
    MemoryByteSource src(b.data(), b.size());
    try {
      io::h5index::parse_chunk_index(src, req);
      return std::string("parsed");
    } catch (const FormatError& e) {
      return std::string(e.what());
    }
  };
  // Two chunk offsets of a leaf swapped: HDF5's search and the table would disagree on which frames they hold.
  EXPECT_NE(outcome([&](auto& b) { swap_range(b, key(leaves[0], 0) + 8, key(leaves[0], 1) + 8, 8 * rank); })
                .find("version 1 B-tree keys out of order: key 1"),
            std::string::npos);
  // Two keys of an internal node swapped.
  EXPECT_NE(outcome([&](auto& b) { swap_range(b, key(inner[0], 0) + 8, key(inner[0], 1) + 8, 8 * rank); })
                .find("out of order"),
            std::string::npos);
  // An internal key moved past the first chunks of the child it leads (its frame set to the next key's).
  EXPECT_NE(outcome([&](auto& b) {
              const std::size_t k1 = key(inner[0], 1) + 8;
              for (std::size_t d = 0; d < 8; ++d) b[key(inner[0], 0) + 8 + d] = b[k1 + d];
            }).find("(damaged index)"),
            std::string::npos);
  // Two whole leaves swapped in their parent (children in the wrong order, every node consistent in itself).
  EXPECT_NE(outcome([&](auto& b) { swap_range(b, key(inner[0], 0) + entry - 8, key(inner[0], 1) + entry - 8, 8); }),
            "parsed");
}

TEST(ChunkTableErrors, Version2BtreeRecordsMustIncrease) {
  ChunkedSpec s = v110({});
  s.dims = {60, 60};
  s.max_dims = {U, U};
  s.chunk = {2, 2};
  const std::string path = test::temp_path("bt2order.h5");
  test::write_chunked(path, s);
  const auto req = request_for(path, s.name);
  std::vector<std::uint8_t> b = file_bytes(path);
  ASSERT_EQ(parse_outcome(b, req), 0);
  // The first leaf: records of type 10 (address 8, two scaled offsets of 8), its checksum after the last record.
  std::size_t leaf = 0;
  for (std::size_t i = 0; i + 4 <= b.size() && !leaf; ++i)
    if (std::memcmp(&b[i], "BTLF", 4) == 0) leaf = i;
  ASSERT_NE(leaf, 0u);
  const std::size_t rec = 8 + 16;
  std::size_t nrec = 0;
  for (std::size_t k = 1; k < 1000 && !nrec; ++k) {
    const std::size_t end = leaf + 6 + k * rec;
    if (end + 4 <= b.size() &&
        io::h5index::lookup3(&b[leaf], end - leaf) == std::uint32_t(io::h5index::load_le(&b[end], 4)))
      nrec = k;
  }
  ASSERT_GE(nrec, 2u);
  swap_range(b, leaf + 6 + 8, leaf + 6 + rec + 8, 16);  // scaled offsets of records 0 and 1
  const std::size_t end = leaf + 6 + nrec * rec;
  const std::uint32_t sum = io::h5index::lookup3(&b[leaf], end - leaf);
  for (int k = 0; k < 4; ++k) b[end + k] = std::uint8_t(sum >> (8 * k));
  MemoryByteSource src(b.data(), b.size());
  expect_error<FormatError>([&] { io::h5index::parse_chunk_index(src, req); },
                            {"version 2 B-tree records out of order"});
}

TEST(ChunkTableErrors, ShortUnfilteredChunk) {
  // HDF5 reads a whole chunk from an unfiltered chunk's address whatever size the index states: a shorter stored
  // size would be padded with the bytes after it.
  ChunkedSpec s;
  s.dims = {8, 4, 4};
  s.chunk = {1, 4, 4};
  const std::string path = test::temp_path("short.h5");
  test::write_chunked(path, s);
  const auto req = request_for(path, s.name);
  std::vector<std::uint8_t> b = file_bytes(path);
  ASSERT_EQ(parse_outcome(b, req), 0);
  const auto leaves = btree_v1_nodes(b, 0);
  ASSERT_EQ(leaves.size(), 1u);
  b[leaves[0] + 24 + 5 * (8 + 8 * 4 + 8)] = 20;  // entry 5's stored size: 20 of the 32 bytes
  MemoryByteSource src(b.data(), b.size());
  expect_error<FormatError>([&] { io::h5index::parse_chunk_index(src, req); },
                            {"chunk 5 is stored unfiltered in 20 bytes; an unfiltered chunk holds 32"});
}

TEST(ChunkTableErrors, ChunkDimsBeyondAFixedExtent) {
  using io::h5index::check_chunk_dims;
  using io::h5index::kUnlimited;
  expect_error<FormatError>([] { check_chunk_dims({64, 32, 32}, {64, 32, 32}, {1, 32, 65568}); },
                            {"chunk dimension 2 is 65568 elements, larger than the dataset's fixed extent 32"});
  expect_error<FormatError>([] { check_chunk_dims({64, 32, 32}, {64, 32, 32}, {1, 32, 0}); }, {"chunk dimension 2 is 0"});
  EXPECT_NO_THROW(check_chunk_dims({64, 32, 32}, {kUnlimited, 32, kUnlimited}, {128, 32, 64}));  // extendible
  EXPECT_NO_THROW(check_chunk_dims({0, 32, 32}, {0, 32, 32}, {4, 32, 32}));                     // empty: no rule
  EXPECT_NO_THROW(check_chunk_dims({64, 32, 32}, {64, 32, 32}, {64, 32, 32}));
}

// ---- issue 33: the version 1 B-tree read level by level on several threads keeps every check, and names the
// first damaged node in key order whichever thread finds it.

namespace {

// A deep tree (K = 2: six levels, 500 leaves, read on several threads) of 1500 raw 48x48 frames.
struct DeepTree {
  std::string path;
  io::h5index::ParseRequest req;
  std::vector<std::uint8_t> clean;
  static constexpr std::size_t kRank = 3, kKeyBytes = 8 + 8 * (kRank + 1), kEntry = kKeyBytes + 8;

  DeepTree() {
    ChunkedSpec s;
    s.dims = {1500, 48, 48};
    s.max_dims = {U, 48, 48};
    s.chunk = {1, 48, 48};
    s.istore_k = 2;
    path = test::temp_path("bt1_deep.h5");
    test::write_chunked(path, s);
    req = request_for(path, s.name);
    clean = file_bytes(path);
  }
  static std::size_t key(std::size_t node, std::size_t i) { return node + 24 + i * kEntry; }
  static std::uint64_t u64(const std::vector<std::uint8_t>& b, std::size_t at) {
    std::uint64_t v = 0;
    std::memcpy(&v, &b[at], 8);
    return v;
  }
  static void set_u64(std::vector<std::uint8_t>& b, std::size_t at, std::uint64_t v) { std::memcpy(&b[at], &v, 8); }
  // The frame (scaled key dim 0) of key i of a node.
  std::uint64_t frame(std::size_t node, std::size_t i) const { return u64(clean, key(node, i) + 8); }
  std::string outcome(const std::vector<std::uint8_t>& b) const {
    MemoryByteSource src(b.data(), b.size());
    try {
      io::h5index::parse_chunk_index(src, req);
      return "parsed";
    } catch (const FormatError& e) {
      return e.what();
    }
  }
};

}  // namespace

TEST(ChunkTableErrors, Version1BtreeLevelByLevelKeepsOrderChecks) {
  const DeepTree t;
  ASSERT_EQ(t.outcome(t.clean), "parsed");
  const auto leaves = btree_v1_nodes(t.clean, 0);
  ASSERT_GE(leaves.size(), 400u);
  // Leaves in file order are in key order here (frames written in order).
  const std::size_t a = leaves[leaves.size() / 3], b = leaves[leaves.size() - 3];
  auto swap_keys = [&](std::vector<std::uint8_t>& bytes, std::size_t node) {
    swap_range(bytes, DeepTree::key(node, 0) + 8, DeepTree::key(node, 1) + 8, 8 * DeepTree::kRank);
  };
  auto expected = [&](std::size_t node) {
    return "chunk index: version 1 B-tree keys out of order: key 1 (" + std::to_string(t.frame(node, 0)) +
           ", 0, 0) does not follow key 0 (" + std::to_string(t.frame(node, 1)) + ", 0, 0) (damaged index)";
  };
  std::vector<std::uint8_t> one = t.clean;
  swap_keys(one, b);
  EXPECT_EQ(t.outcome(one), expected(b));
  // Two damaged leaves: the first in key order is named, whichever thread reads it (the same on every run).
  std::vector<std::uint8_t> two = one;
  swap_keys(two, a);
  for (int run = 0; run < 20; ++run) ASSERT_EQ(t.outcome(two), expected(a)) << "run " << run;
  // A leaf's chunks beyond the range its parent gives (its first frame moved past the next leaf's).
  std::vector<std::uint8_t> moved = t.clean;
  const std::size_t next = leaves[leaves.size() / 3 + 1];
  DeepTree::set_u64(moved, DeepTree::key(a, 0) + 8, t.frame(next, 0));
  EXPECT_NE(t.outcome(moved).find("lies outside the range"), std::string::npos) << t.outcome(moved);
}

TEST(ChunkTableErrors, Version1BtreeLevelByLevelFindsCycles) {
  const DeepTree t;
  const auto level1 = btree_v1_nodes(t.clean, 1), level2 = btree_v1_nodes(t.clean, 2);
  ASSERT_GE(level1.size(), 100u);
  ASSERT_FALSE(level2.empty());
  const std::size_t child = DeepTree::kKeyBytes;  // child pointer of entry i: key(node, i) + kKeyBytes
  const std::string cycle = "chunk index: version 1 B-tree nodes form a cycle";
  // A level-1 node's child pointing back up at a level-2 node (a node met on a level above).
  std::vector<std::uint8_t> up = t.clean;
  const std::size_t n1 = level1[level1.size() / 2];
  DeepTree::set_u64(up, DeepTree::key(n1, 1) + child, level2[0]);
  EXPECT_EQ(t.outcome(up), cycle);
  // Two children of one node sharing a leaf (a node met twice on one level).
  std::vector<std::uint8_t> shared = t.clean;
  DeepTree::set_u64(shared, DeepTree::key(n1, 1) + child, DeepTree::u64(t.clean, DeepTree::key(n1, 0) + child));
  EXPECT_EQ(t.outcome(shared), cycle);
  // Two nodes of different parents sharing a leaf.
  std::vector<std::uint8_t> cousins = t.clean;
  DeepTree::set_u64(cousins, DeepTree::key(level1.back(), 0) + child,
                    DeepTree::u64(t.clean, DeepTree::key(level1.front(), 0) + child));
  EXPECT_EQ(t.outcome(cousins), cycle);
}

TEST(ChunkTableErrors, Version1BtreeLevelByLevelTruncatedNode) {
  const DeepTree t;
  // The last inner node in the file: every node of the levels above it and of its own level lies before it.
  std::size_t last = 0;
  for (int level = 1; level < 8; ++level)
    for (std::size_t n : btree_v1_nodes(t.clean, level)) last = std::max(last, n);
  ASSERT_GT(last, 0u);
  const unsigned entries = t.clean[last + 6] | (t.clean[last + 7] << 8);
  const std::size_t node_bytes = 24 + entries * DeepTree::kEntry + DeepTree::kKeyBytes;
  std::vector<std::uint8_t> cut(t.clean.begin(), t.clean.begin() + static_cast<std::ptrdiff_t>(last + 30));
  EXPECT_EQ(t.outcome(cut), "chunk index: B-tree node at byte " + std::to_string(last) + " (+" +
                                std::to_string(node_bytes) + ") lies beyond the end of the file (" +
                                std::to_string(last + 30) + " bytes; truncated or corrupt)");
  cut.resize(last + 5);  // inside the node's header
  EXPECT_EQ(t.outcome(cut), "chunk index: B-tree node is truncated");
  // A node count that runs past the end of the file.
  std::vector<std::uint8_t> entries_past = t.clean;
  entries_past[last + 6] = entries_past[last + 7] = 0xff;
  EXPECT_NE(t.outcome(entries_past).find("lies beyond the end of the file"), std::string::npos);
}

TEST(ChunkTableErrors, FixedArrayPagesOnThreads) {
  // 40 pages of 1024 filtered chunks (decoded on several threads), pages 3 and 17 never written: the table equals
  // the HDF5 library's, and of two damaged pages the first is named whichever thread checks it.
  ChunkedSpec s = v110({});
  s.dims = {40 * 1024, 4, 4};
  s.chunk = {1, 4, 4};
  s.deflate = true;
  s.written = [](std::uint64_t i) { return i / 1024 != 3 && i / 1024 != 17; };
  const std::string path = test::temp_path("fa_pages.h5");
  test::write_chunked(path, s);
  const io::ChunkTable t = io::read_chunk_table(path, s.name);
  EXPECT_EQ(t.method, "parsed: fixed array");
  ASSERT_EQ(t.chunks.size(), 40u * 1024);
  std::uint64_t found = 0;
  for (const auto& c : t.chunks) found += c.size > 0;
  EXPECT_EQ(found, 38u * 1024);
  test::expect_matches_hdf5(path, s.name, t, false);

  const auto req = request_for(path, s.name);
  const std::vector<std::uint8_t> clean = file_bytes(path);
  std::size_t fahd = 0, fadb = 0;
  for (std::size_t i = 0; i + 4 <= clean.size(); ++i) {
    if (std::memcmp(&clean[i], "FAHD", 4) == 0) fahd = i;
    if (std::memcmp(&clean[i], "FADB", 4) == 0) fadb = i;
  }
  ASSERT_GT(fahd, 0u);
  ASSERT_GT(fadb, 0u);
  const std::size_t elem_bytes = clean[fahd + 6], page_bits = clean[fahd + 7];
  ASSERT_EQ(page_bits, 10u);
  const std::size_t page0 = fadb + 4 + 1 + 1 + 8 + (40 + 7) / 8 + 4, page_bytes = 1024 * elem_bytes + 4;
  auto damaged = [&](std::initializer_list<std::size_t> pages) {
    std::vector<std::uint8_t> b = clean;
    for (std::size_t p : pages) b[page0 + p * page_bytes + 100] ^= 0x5A;
    MemoryByteSource src(b.data(), b.size());
    try {
      io::h5index::parse_chunk_index(src, req);
      return std::string("parsed");
    } catch (const FormatError& e) {
      return std::string(e.what());
    }
  };
  EXPECT_EQ(damaged({30}), "chunk index: checksum mismatch in fixed array data block page 30");
  for (int run = 0; run < 10; ++run)
    ASSERT_EQ(damaged({33, 6}), "chunk index: checksum mismatch in fixed array data block page 6") << "run " << run;
  EXPECT_EQ(damaged({17}), "parsed");  // a page never written is not read
  // pages read by their threads: a file that ends inside the pages is named before any page is read
  ASSERT_LT(fahd, page0);  // the header before the pages: the cut leaves it whole
  {
    std::vector<std::uint8_t> cut(clean.begin(), clean.begin() + std::ptrdiff_t(page0 + 20 * page_bytes));
    MemoryByteSource src(cut.data(), cut.size());
    try {
      io::h5index::parse_chunk_index(src, req);
      ADD_FAILURE() << "a truncated fixed array parsed";
    } catch (const FormatError& e) {
      EXPECT_NE(std::string(e.what()).find("chunk index: fixed array pages at byte"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("lies beyond the end of the file"), std::string::npos) << e.what();
    }
  }
}
