// Chunk table read from the dataset's own index, for every HDF5 chunk index kind, compared chunk by chunk with the
// HDF5 library; links followed; non-chunked datasets and corrupt indexes give FormatError.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>

#include "chunk_files.hpp"
#include "core/error.hpp"
#include "io/hdf5/index/hdf5_api_fallback.hpp"
#include "support/temp_files.hpp"

using namespace qgpu;
using test::ChunkedSpec;

namespace {

constexpr hsize_t U = H5S_UNLIMITED;

ChunkedSpec v110(ChunkedSpec s) {
  s.low = H5F_LIBVER_V110;
  s.high = H5F_LIBVER_V110;
  return s;
}

io::ChunkTable write_and_read(const std::string& path, const ChunkedSpec& s) {
  test::write_chunked(path, s);
  return io::read_chunk_table(path, s.name);
}

void expect_method(const io::ChunkTable& t, const std::string& method) { EXPECT_EQ(t.method, "parsed: " + method); }

}  // namespace

TEST(ChunkTable, BtreeV1EarliestFilteredMultiLevel) {  // 3D frames, one frame per chunk, unlimited frames
  ChunkedSpec s;
  s.dims = {300, 16, 16};
  s.max_dims = {U, 16, 16};
  s.chunk = {1, 16, 16};
  s.deflate = true;
  s.written = [](std::uint64_t i) { return i % 11 != 5; };
  const std::string path = test::temp_path("bt1.h5");
  const io::ChunkTable t = write_and_read(path, s);
  expect_method(t, "version 1 B-tree");
  EXPECT_EQ(t.dims, (std::vector<std::uint64_t>{300, 16, 16}));
  EXPECT_EQ(t.chunk_dims, (std::vector<std::uint64_t>{1, 16, 16}));
  EXPECT_EQ(t.file, path);
  EXPECT_EQ(t.dataset_path, "/data");
  ASSERT_EQ(t.chunks.size(), 300u);
  EXPECT_EQ(t.chunks[5].size, 0u);  // never written
  EXPECT_EQ(t.chunks[3].filter_mask, 1u);
  EXPECT_EQ(t.chunks[4].size, 8u + (4 * 37) % 300);
  test::expect_matches_hdf5(path, s.name, t, true);
}

TEST(ChunkTable, BtreeV1V18FourDimPartialEdges) {
  ChunkedSpec s;
  s.dims = {12, 10, 10, 10};
  s.chunk = {1, 1, 8, 8};
  s.low = H5F_LIBVER_V18;
  s.high = H5F_LIBVER_V18;
  const std::string path = test::temp_path("bt1v18.h5");
  const io::ChunkTable t = write_and_read(path, s);
  expect_method(t, "version 1 B-tree");
  ASSERT_EQ(t.chunks.size(), 12u * 10 * 2 * 2);
  EXPECT_EQ(t.chunks[7].size, 8u * 8 * 2);
  test::expect_matches_hdf5(path, s.name, t, false);
}

// The version 1 B-tree is read level by level, nearby nodes in one read and the nodes of a level decoded on
// several threads (issue 33). Small chunk B-tree nodes (K = 2, 3, 5) make trees of several levels with hundreds of
// leaves; frames of 4.5 KB between the leaves of the raw cases put them in reads of their own (shared by the
// threads), the small filtered chunks put many nodes in one read. Written in order, scrambled, with chunks
// missing: the table must equal the HDF5 library's H5Dget_chunk_info, chunk by chunk.
TEST(ChunkTable, BtreeV1DeepTreesMatchChunkInfo) {
  struct Case {
    const char* name;
    unsigned k;
    bool scrambled, deflate;
    std::function<bool(std::uint64_t)> written;
    int min_height;
  };
  const auto all = [](std::uint64_t) { return true; };
  const std::vector<Case> cases = {
      {"bt1_k2.h5", 2, false, false, all, 4},
      {"bt1_k3_scrambled.h5", 3, true, false, all, 3},
      {"bt1_k5_missing.h5", 5, false, false, [](std::uint64_t i) { return i % 3 != 1; }, 3},
      {"bt1_k2_filtered.h5", 2, false, true, [](std::uint64_t i) { return i % 13 != 4; }, 4},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    ChunkedSpec s;
    s.dims = {1500, 48, 48};
    s.max_dims = {U, 48, 48};
    s.chunk = {1, 48, 48};
    s.istore_k = c.k;
    s.deflate = c.deflate;
    s.written = c.written;
    const std::string path = test::temp_path(c.name);
    if (!c.scrambled) {
      test::write_chunked(path, s);
    } else {
      hid_t f = test::create_file(path, s);
      hid_t ds = test::create_dataset(f, s);
      const std::vector<std::uint8_t> raw(48 * 48 * 2, 7);
      for (std::uint64_t n = 0; n < 1500; ++n) {
        const std::uint64_t i = (n * 601) % 1500;  // 601 is prime to 1500: every chunk once, scrambled
        const auto off = test::chunk_offset(i, s.dims, s.chunk);
        ASSERT_GE(H5Dwrite_chunk(ds, H5P_DEFAULT, 0, off.data(), raw.size(), raw.data()), 0);
      }
      H5Dclose(ds);
      H5Fclose(f);
    }
    EXPECT_GE(test::btree_v1_height(path), c.min_height - 1) << "a tree of at least " << c.min_height << " levels";
    const io::ChunkTable t = io::read_chunk_table(path, s.name);
    expect_method(t, "version 1 B-tree");
    ASSERT_EQ(t.chunks.size(), 1500u);
    std::uint64_t written = 0;
    for (std::uint64_t i = 0; i < 1500; ++i) written += c.written(i);
    std::uint64_t found = 0;
    for (const auto& ch : t.chunks) found += ch.size > 0;
    EXPECT_EQ(found, written);
    test::expect_matches_chunk_info(path, s.name, t);
    std::filesystem::remove(path);
  }
}

TEST(ChunkTable, FixedArrayUnpaged) {
  ChunkedSpec s = v110({});
  s.dims = {100, 8, 8};
  s.chunk = {1, 8, 8};
  s.written = [](std::uint64_t i) { return i != 17; };
  const std::string path = test::temp_path("fa.h5");
  const io::ChunkTable t = write_and_read(path, s);
  expect_method(t, "fixed array");
  EXPECT_EQ(t.chunks[17].size, 0u);
  test::expect_matches_hdf5(path, s.name, t, true);
}

TEST(ChunkTable, FixedArrayMaxDimsLargerThanDims) {  // elements are ordered over the grid of the maximum dims
  ChunkedSpec s = v110({});
  s.dims = {10, 12};
  s.max_dims = {20, 30};
  s.chunk = {3, 5};
  s.deflate = true;
  const std::string path = test::temp_path("fa_max.h5");
  const io::ChunkTable t = write_and_read(path, s);
  expect_method(t, "fixed array");
  ASSERT_EQ(t.chunks.size(), 4u * 3);
  test::expect_matches_hdf5(path, s.name, t, true);
}

TEST(ChunkTable, FixedArrayPagedFilteredWithUnwrittenPage) {
  ChunkedSpec s = v110({});
  s.dims = {5200, 8, 8};
  s.chunk = {1, 8, 8};
  s.deflate = true;
  // Page 1 (chunks 1024-2047) never written: its page-init bit stays clear; a few holes elsewhere.
  s.written = [](std::uint64_t i) { return !(i >= 1024 && i < 2048) && i % 97 != 1; };
  const std::string path = test::temp_path("fa_paged.h5");
  const io::ChunkTable t = write_and_read(path, s);
  expect_method(t, "fixed array");
  EXPECT_EQ(t.chunks[1500].size, 0u);
  EXPECT_GT(t.chunks[2048].size, 0u);
  test::expect_matches_hdf5(path, s.name, t, false);
}

TEST(ChunkTable, ExtensibleArrayFilteredSuperBlocks) {  // one unlimited dim (frames), 6000 chunks
  ChunkedSpec s = v110({});
  s.dims = {6000, 8, 8};
  s.max_dims = {U, 8, 8};
  s.chunk = {1, 8, 8};
  s.deflate = true;
  s.written = [](std::uint64_t i) { return !(i >= 300 && i < 700) && i % 13 != 2; };
  const std::string path = test::temp_path("ea.h5");
  const io::ChunkTable t = write_and_read(path, s);
  expect_method(t, "extensible array");
  EXPECT_EQ(t.chunks[400].size, 0u);
  test::expect_matches_hdf5(path, s.name, t, false);
}

TEST(ChunkTable, ExtensibleArrayPagedDataBlocks) {  // > 131060 elements reach super blocks with paged data blocks
  ChunkedSpec s = v110({});
  s.dims = {140000, 1};
  s.max_dims = {U, 1};
  s.chunk = {1, 1};
  s.type = H5T_STD_U8LE;
  // Chunks 132084-133107 fill page 1 of the first data block of super block 13: leave it uninitialized.
  s.written = [](std::uint64_t i) { return !(i >= 132084 && i < 133108) && i % 1000 != 999; };
  const std::string path = test::temp_path("ea_paged.h5");
  const io::ChunkTable t = write_and_read(path, s);
  expect_method(t, "extensible array");
  EXPECT_EQ(t.chunks[132500].size, 0u);
  EXPECT_EQ(t.chunks[133108].size, 1u);
  test::expect_matches_hdf5(path, s.name, t, false);
}

TEST(ChunkTable, ExtensibleArrayUnlimitedLastDim) {  // the unlimited dim leads the element order ("swizzled")
  ChunkedSpec s = v110({});
  s.dims = {8, 300, 4};
  s.max_dims = {8, U, 4};
  s.chunk = {2, 1, 3};
  s.written = [](std::uint64_t i) { return i % 5 != 0; };
  const std::string path = test::temp_path("ea_swz.h5");
  const io::ChunkTable t = write_and_read(path, s);
  expect_method(t, "extensible array");
  test::expect_matches_hdf5(path, s.name, t, false);
}

TEST(ChunkTable, BtreeV2TwoUnlimitedDims) {
  ChunkedSpec s = v110({});
  s.dims = {160, 150};
  s.max_dims = {U, U};
  s.chunk = {2, 2};
  s.written = [](std::uint64_t i) { return i % 3 != 1; };
  const std::string path = test::temp_path("bt2.h5");
  const io::ChunkTable t = write_and_read(path, s);
  expect_method(t, "version 2 B-tree");
  ASSERT_EQ(t.chunks.size(), 80u * 75);
  test::expect_matches_hdf5(path, s.name, t, false);
}

TEST(ChunkTable, BtreeV2Filtered) {
  ChunkedSpec s = v110({});
  s.dims = {40, 30, 6};
  s.max_dims = {U, 30, U};
  s.chunk = {1, 7, 6};
  s.deflate = true;
  const std::string path = test::temp_path("bt2f.h5");
  const io::ChunkTable t = write_and_read(path, s);
  expect_method(t, "version 2 B-tree");
  test::expect_matches_hdf5(path, s.name, t, true);
}

TEST(ChunkTable, SingleChunkUnfilteredAndFiltered) {
  for (bool deflate : {false, true}) {
    ChunkedSpec s = v110({});
    s.dims = {8, 8};
    s.chunk = {8, 8};
    s.deflate = deflate;
    const std::string path = test::temp_path(deflate ? "single_f.h5" : "single.h5");
    const io::ChunkTable t = write_and_read(path, s);
    expect_method(t, "single chunk");
    ASSERT_EQ(t.chunks.size(), 1u);
    EXPECT_EQ(t.chunks[0].size, deflate ? 8u : 128u);
    test::expect_matches_hdf5(path, s.name, t, true);
  }
}

TEST(ChunkTable, ImplicitEarlyAllocation) {
  ChunkedSpec s = v110({});
  s.dims = {10, 12};
  s.max_dims = {20, 30};
  s.chunk = {3, 5};
  s.early_alloc = true;
  s.written = [](std::uint64_t i) { return i % 2 == 0; };  // all chunks are allocated anyway
  const std::string path = test::temp_path("implicit.h5");
  const io::ChunkTable t = write_and_read(path, s);
  expect_method(t, "implicit");
  ASSERT_EQ(t.chunks.size(), 12u);
  for (const auto& c : t.chunks) EXPECT_EQ(c.size, 3u * 5 * 2);
  test::expect_matches_hdf5(path, s.name, t, true);
}

TEST(ChunkTable, RealDeflateThroughH5Dwrite) {  // compressed sizes from the filter itself
  const std::string path = test::temp_path("deflate.h5");
  ChunkedSpec s = v110({});
  s.dims = {64, 16, 16};
  s.chunk = {1, 16, 16};
  s.deflate = true;
  hid_t f = test::create_file(path, s);
  hid_t ds = test::create_dataset(f, s);
  std::vector<std::uint16_t> data(64 * 16 * 16);
  for (std::size_t k = 0; k < data.size(); ++k) data[k] = static_cast<std::uint16_t>((k / 256) * (k % 7) + (k * k) % (k / 256 + 1));
  ASSERT_GE(H5Dwrite(ds, H5T_NATIVE_UINT16, H5S_ALL, H5S_ALL, H5P_DEFAULT, data.data()), 0);
  H5Dclose(ds);
  H5Fclose(f);
  const io::ChunkTable t = io::read_chunk_table(path, s.name);
  expect_method(t, "fixed array");
  EXPECT_NE(t.chunks[0].size, t.chunks[63].size);
  test::expect_matches_hdf5(path, s.name, t, true);
}

TEST(ChunkTable, UserblockShiftsAddresses) {
  ChunkedSpec s;
  s.dims = {20, 8, 8};
  s.max_dims = {U, 8, 8};
  s.chunk = {1, 8, 8};
  s.userblock = 1024;
  const std::string path = test::temp_path("ub.h5");
  const io::ChunkTable t = write_and_read(path, s);
  expect_method(t, "version 1 B-tree");
  test::expect_matches_hdf5(path, s.name, t, true, 1024);
}

TEST(ChunkTable, SoftLinkAndExternalLink) {
  ChunkedSpec s = v110({});
  s.dims = {30, 8, 8};
  s.max_dims = {U, 8, 8};
  s.chunk = {1, 8, 8};
  s.name = "/entry/data/data_000001";
  const std::string target = test::temp_path("target.h5");
  test::write_chunked(target, s);
  const std::string master = test::temp_path("master.h5");
  hid_t f = H5Fcreate(master.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  H5Gclose(H5Gcreate2(f, "/entry", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
  ASSERT_GE(H5Lcreate_external(target.c_str(), s.name.c_str(), f, "/entry/ext", H5P_DEFAULT, H5P_DEFAULT), 0);
  ASSERT_GE(H5Lcreate_soft("/entry/ext", f, "/entry/soft", H5P_DEFAULT, H5P_DEFAULT), 0);
  H5Fclose(f);
  for (const char* link : {"/entry/ext", "/entry/soft"}) {
    const io::ChunkTable t = io::read_chunk_table(master, link);
    expect_method(t, "extensible array");
    EXPECT_EQ(t.file, target) << link;
    EXPECT_EQ(t.dataset_path, s.name) << link;
    test::expect_matches_hdf5(target, s.name, t, true);
  }
  // A soft link inside the file that holds the data.
  hid_t g = H5Fopen(target.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  ASSERT_GE(H5Lcreate_soft(s.name.c_str(), g, "/alias", H5P_DEFAULT, H5P_DEFAULT), 0);
  H5Fclose(g);
  const io::ChunkTable t = io::read_chunk_table(target, "/alias");
  expect_method(t, "extensible array");
  test::expect_matches_hdf5(target, s.name, t, true);
}

TEST(ChunkTable, Hdf5ApiFallbackGivesTheSameTable) {  // the slow path taken for indexes the parser does not read
  ChunkedSpec s = v110({});
  s.dims = {40, 6, 6};
  s.max_dims = {U, 6, 6};
  s.chunk = {1, 3, 6};
  s.deflate = true;
  s.userblock = 512;
  s.written = [](std::uint64_t i) { return i % 4 != 1; };
  const std::string path = test::temp_path("fallback.h5");
  const io::ChunkTable parsed = write_and_read(path, s);
  io::ChunkTable api;
  api.file = path;
  api.dataset_path = s.name;
  api.dims = parsed.dims;
  api.chunk_dims = parsed.chunk_dims;
  hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  hid_t ds = H5Dopen2(f, s.name.c_str(), H5P_DEFAULT);
  io::h5index::fill_from_hdf5_api(ds, api, 512, "test");
  H5Dclose(ds);
  H5Fclose(f);
  EXPECT_EQ(api.method, "hdf5 api: test");
  ASSERT_EQ(api.chunks.size(), parsed.chunks.size());
  for (std::size_t i = 0; i < api.chunks.size(); ++i) {
    EXPECT_EQ(api.chunks[i].offset, parsed.chunks[i].offset) << i;
    EXPECT_EQ(api.chunks[i].size, parsed.chunks[i].size) << i;
    EXPECT_EQ(api.chunks[i].filter_mask, parsed.chunks[i].filter_mask) << i;
  }
  test::expect_matches_hdf5(path, s.name, api, true, 512);
}

TEST(ChunkTable, SmallAddressesAndLargeBtreeNodes) {  // 4- and 2-byte addresses/lengths; B-tree nodes of 200 entries
  struct Case {
    const char* name;
    ChunkedSpec spec;
    const char* method;
  };
  std::vector<Case> cases;
  ChunkedSpec bt1;
  bt1.dims = {700, 4, 4};
  bt1.max_dims = {U, 4, 4};
  bt1.chunk = {1, 4, 4};
  bt1.deflate = true;
  bt1.sizeof_addr = bt1.sizeof_len = 4;
  bt1.istore_k = 100;
  bt1.written = [](std::uint64_t i) { return i % 9 != 4; };
  cases.push_back({"bt1_4.h5", bt1, "version 1 B-tree"});
  ChunkedSpec ea = v110({});
  ea.dims = {900, 4};
  ea.max_dims = {U, 4};
  ea.chunk = {1, 4};
  ea.deflate = true;
  ea.sizeof_addr = ea.sizeof_len = 4;
  ea.written = [](std::uint64_t i) { return i % 9 != 4; };
  ea.sizeof_len = 8;  // (HDF5 1.10 cannot open an extensible array index with 4-byte lengths)
  cases.push_back({"ea_4.h5", ea, "extensible array"});
  ChunkedSpec fa = v110({});
  fa.dims = {1500, 2};
  fa.chunk = {1, 2};
  fa.sizeof_addr = fa.sizeof_len = 4;
  fa.written = [](std::uint64_t i) { return i % 9 != 4; };
  cases.push_back({"fa_4.h5", fa, "fixed array"});
  ChunkedSpec bt2 = v110({});
  bt2.dims = {20, 20};
  bt2.max_dims = {U, U};
  bt2.chunk = {2, 2};
  bt2.deflate = true;
  bt2.sizeof_addr = bt2.sizeof_len = 2;
  cases.push_back({"bt2_2.h5", bt2, "version 2 B-tree"});
  for (const auto& c : cases) {
    const std::string path = test::temp_path(c.name);
    const io::ChunkTable t = write_and_read(path, c.spec);
    expect_method(t, c.method);
    test::expect_matches_hdf5(path, c.spec.name, t, true);
  }
}

TEST(ChunkTable, ObjectHeaderContinuationBlocks) {  // attributes added after the data push the header into more blocks
  for (bool v2 : {false, true}) {
    ChunkedSpec s = v2 ? v110({}) : ChunkedSpec{};
    s.dims = {50, 4, 4};
    s.max_dims = {U, 4, 4};
    s.chunk = {1, 4, 4};
    const std::string path = test::temp_path(v2 ? "ohdr2.h5" : "ohdr1.h5");
    test::write_chunked(path, s);
    hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    hid_t ds = H5Dopen2(f, s.name.c_str(), H5P_DEFAULT);
    hsize_t n = 40;
    hid_t sp = H5Screate_simple(1, &n, nullptr);
    std::vector<std::int32_t> v(40, 7);
    for (int a = 0; a < 6; ++a) {
      const std::string name = "attribute_" + std::to_string(a);
      hid_t at = H5Acreate2(ds, name.c_str(), H5T_STD_I32LE, sp, H5P_DEFAULT, H5P_DEFAULT);
      H5Awrite(at, H5T_NATIVE_INT32, v.data());
      H5Aclose(at);
    }
    H5Sclose(sp);
    H5Dclose(ds);
    H5Fclose(f);
    if (v2) {
      std::ifstream in(path, std::ios::binary);
      const std::string bytes{std::istreambuf_iterator<char>(in), {}};
      ASSERT_NE(bytes.find("OCHK"), std::string::npos) << "no continuation block was written";
    }
    const io::ChunkTable t = io::read_chunk_table(path, s.name);
    expect_method(t, v2 ? "extensible array" : "version 1 B-tree");
    test::expect_matches_hdf5(path, s.name, t, true);
  }
}
