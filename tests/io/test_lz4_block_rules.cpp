// The LZ4 block rules both bitshuffle decoders enforce (io/hdf5/codec/lz4_block_rules.hpp), on hand-built LZ4
// blocks of one 4 x 8 uint8 frame (one partial bitshuffle block of 32 bytes of bit planes): a valid block decodes
// to the analytic frame; each block that breaks one rule is refused by the host codec and by the CUDA decoder
// (the CUDA variant skips without a GPU). liblz4's own verdict on each block is asserted too: it accepts offset 0,
// the rule the host codec adds to match the CUDA decoder (docs/reliability.md).
#include <gtest/gtest.h>
#include <hdf5.h>
#include <lz4.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "io/hdf5/bitshuffle_plugin.hpp"
#include "io/hdf5/codec/lz4_block_rules.hpp"
#include "io/hdf5/load.hpp"
#include "support/cuda_required.hpp"
#include "support/expect_error.hpp"
#include "support/temp_files.hpp"

using namespace qgpu;
using Bytes = std::vector<std::uint8_t>;

namespace {

constexpr std::size_t kPlaneBytes = 32;  // 32 uint8 elements: 8 bit planes of 4 bytes

Bytes literals(char first, std::size_t n) {
  Bytes b;
  for (std::size_t i = 0; i < n; ++i) b.push_back(std::uint8_t(first + i));
  return b;
}

Bytes cat(std::initializer_list<Bytes> parts) {
  Bytes b;
  for (const Bytes& p : parts) b.insert(b.end(), p.begin(), p.end());
  return b;
}

// Valid: 'a', a match of offset 1 and length 10 (bytes 1..10), then 21 literals 'A'..'U': 32 bytes.
Bytes valid_block() { return cat({{0x16, 'a', 0x01, 0x00}, {0xF0, 6}, literals('A', 21)}); }

struct BrokenBlock {
  std::string name;
  Bytes block;
  std::string host_reason;  // the rule lz4_block_violation names
  bool liblz4_accepts;      // what LZ4_decompress_safe (1.9.4) says of it
};

std::vector<BrokenBlock> broken_blocks() {
  return {
      // Rule 4: the valid block with offset 0.
      {"offset_zero", cat({{0x16, 'a', 0x00, 0x00}, {0xF0, 6}, literals('A', 21)}), "LZ4 match offset 0", true},
      // Rule 4: offset 2 with one byte decoded so far.
      {"offset_before_start", cat({{0x16, 'a', 0x02, 0x00}, {0xF0, 6}, literals('A', 21)}),
       "reaches before the start of the block", false},
      // Rule 3: 21 literals, then a match at byte 21 (> 32 - 12), then 7 literals.
      {"match_starts_in_last_12", cat({{0xF0, 6}, literals('A', 21), {0x01, 0x00}, {0x70}, literals('a', 7)}),
       "match starts within the last 12 bytes", false},
      // Rule 2: 'a', a match of length 28 ending at byte 29 (> 32 - 5), then 3 literals.
      {"match_ends_in_last_5", cat({{0x1F, 'a', 0x01, 0x00, 9}, {0x30}, literals('A', 3)}),
       "match reaches into the last 5 bytes", false},
      // Rule 1: 'a' and a match of length 10, then the block ends (a match filling the block breaks rule 2 first).
      {"ends_with_a_match", Bytes{0x16, 'a', 0x01, 0x00}, "ends after a match", false},
      // Bounds: a literal run longer than the block's input.
      {"literals_past_input", cat({{0xF0, 20}, literals('A', 21)}), "literals run past the end of the block", false},
  };
}

// The bitshuffle chunk of one 32-element uint8 frame holding `block` (header, block length, block; no tail).
Bytes chunk_of(const Bytes& block) {
  Bytes c(16, 0);
  c[7] = kPlaneBytes;                                          // uint64 BE decoded bytes
  c[8] = 0, c[9] = 0, c[10] = 0x20, c[11] = 0;                 // uint32 BE block bytes: 8192 (default for uint8)
  const std::uint32_t n = std::uint32_t(block.size());
  c[12] = std::uint8_t(n >> 24), c[13] = std::uint8_t(n >> 16), c[14] = std::uint8_t(n >> 8), c[15] = std::uint8_t(n);
  c.resize(16 + block.size());
  if (!block.empty()) std::memcpy(c.data() + 16, block.data(), block.size());  // (GCC 12 warns on an insert here)
  return c;
}

// A 1-frame (1, 4, 8) uint8 dataset /entry/data/data, bitshuffle+LZ4, whose chunk is written raw.
std::string file_with_chunk(const std::string& name, const Bytes& chunk) {
  h5::ensure_bitshuffle_filter();
  const std::string path = test::temp_path(name);
  hid_t f = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  hid_t lcpl = H5Pcreate(H5P_LINK_CREATE);
  H5Pset_create_intermediate_group(lcpl, 1);
  const hsize_t dims[3] = {1, 4, 8};
  hid_t sp = H5Screate_simple(3, dims, nullptr);
  hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
  H5Pset_chunk(dcpl, 3, dims);
  const unsigned cd[2] = {0, h5::kBitshuffleLz4};
  H5Pset_filter(dcpl, h5::kBitshuffleFilter, H5Z_FLAG_MANDATORY, 2, cd);
  hid_t d = H5Dcreate2(f, "/entry/data/data", H5T_STD_U8LE, sp, lcpl, dcpl, H5P_DEFAULT);
  const hsize_t off[3] = {0, 0, 0};
  EXPECT_GE(H5Dwrite_chunk(d, H5P_DEFAULT, 0, off, chunk.size(), chunk.data()), 0);
  H5Dclose(d);
  H5Pclose(dcpl);
  H5Sclose(sp);
  H5Pclose(lcpl);
  H5Fclose(f);
  return path;
}

io::LoadOptions on(const std::string& backend, const std::string& decoder = "auto") {
  io::LoadOptions o;
  o.backend = backend;
  o.decoder = decoder;
  return o;
}

// The frame the valid block stands for, from the bit-plane layout: element e has bit p = bit (e & 7) of byte
// 4p + e / 8 of the planes.
Bytes valid_frame() {
  Bytes planes(11, 'a');
  const Bytes tail = literals('A', 21);
  planes.insert(planes.end(), tail.begin(), tail.end());
  Bytes frame(32, 0);
  for (std::size_t e = 0; e < 32; ++e)
    for (int p = 0; p < 8; ++p) frame[e] |= std::uint8_t(((planes[4 * p + e / 8] >> (e & 7)) & 1) << p);
  return frame;
}

int liblz4_decode(const Bytes& block) {
  char out[kPlaneBytes];
  return LZ4_decompress_safe(reinterpret_cast<const char*>(block.data()), out, int(block.size()), int(kPlaneBytes));
}

}  // namespace

TEST(Lz4BlockRules, WalkNamesEachBrokenRuleAndLiblz4AgreesExceptOffsetZero) {
  EXPECT_EQ(io::codec::lz4_block_violation(valid_block().data(), valid_block().size(), kPlaneBytes), nullptr);
  EXPECT_EQ(liblz4_decode(valid_block()), int(kPlaneBytes));
  for (const BrokenBlock& b : broken_blocks()) {
    SCOPED_TRACE(b.name);
    const char* why = io::codec::lz4_block_violation(b.block.data(), b.block.size(), kPlaneBytes);
    ASSERT_NE(why, nullptr);
    EXPECT_NE(std::string(why).find(b.host_reason), std::string::npos) << why;
    EXPECT_EQ(liblz4_decode(b.block) >= 0, b.liblz4_accepts);
  }
}

TEST(Lz4BlockRules, HostCodecDecodesTheValidBlockAndRefusesEachBrokenOne) {
  const Dataset ds = io::load(file_with_chunk("lz4_valid.h5", chunk_of(valid_block())), on("cpu", "quantem"));
  EXPECT_EQ(ds.read().bytes, valid_frame());
  for (const BrokenBlock& b : broken_blocks()) {
    SCOPED_TRACE(b.name);
    const std::string path = file_with_chunk("lz4_" + b.name + ".h5", chunk_of(b.block));
    test::expect_error<FormatError>([&] { io::load(path, on("cpu", "quantem")); }, {"block 0: " , b.host_reason});
  }
}

TEST(Lz4BlockRules, CudaDecoderDecodesTheValidBlockAndRefusesEachBrokenOne) {
  QGPU_REQUIRE_CUDA();
  const Dataset ds = io::load(file_with_chunk("lz4_valid_cuda.h5", chunk_of(valid_block())), on("cuda"));
  EXPECT_EQ(ds.read().bytes, valid_frame());
  for (const BrokenBlock& b : broken_blocks()) {
    SCOPED_TRACE(b.name);
    const std::string path = file_with_chunk("lz4_" + b.name + "_cuda.h5", chunk_of(b.block));
    test::expect_error<FormatError>([&] { io::load(path, on("cuda")); }, {"malformed LZ4 block"});
  }
}
