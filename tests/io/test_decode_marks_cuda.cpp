// The GPU decoder's live-group marks (encoded::LiveGroups, which the encoder of an encoded load trusts to skip the
// groups of 32 pixels that are zero over a tile, and their chunks of 16 frames that are zero): exactly the chunks of
// groups with a nonzero count, on every count dtype, on the word-transpose path (blocks of whole 64-element words)
// and the byte path (blocks of 8 x odd elements, partial blocks), for tiles not dividing the frame count, of one
// chunk, several and more than 32 (two words per group); the decoded frames stay the host codec's. The decoder's
// frame totals (LiveGroups::totals) equal the frames' sums on both paths.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

#include "core/error.hpp"
#include "device/cuda/cuda_check.hpp"
#include "device/cuda/device_buffer.hpp"
#include "io/hdf5/codec/bitshuffle_encode_host.hpp"
#include "io/hdf5/cuda/bitshuffle_lz4_decode.hpp"
#include "support/cuda_required.hpp"

using namespace qgpu;

namespace {

struct Case {
  std::size_t elem, pixels, block_elems;
  std::uint32_t tile;
};

// Frames where most groups of 32 pixels are zero over a tile: a few groups always busy, a few with one count in a
// single frame (at either end of the group, so a mark that misses the group's edge shows), the rest zero.
std::vector<std::uint8_t> frames_with_sparse_groups(const Case& c, std::size_t frames, std::mt19937& rng) {
  std::vector<std::uint8_t> b(frames * c.pixels * c.elem, 0);
  const auto set = [&](std::size_t f, std::size_t p, std::uint32_t v) {
    for (std::size_t k = 0; k < c.elem; ++k) b[(f * c.pixels + p) * c.elem + k] = static_cast<std::uint8_t>(v >> (8 * k));
  };
  const std::size_t groups = c.pixels / 32;
  for (std::size_t f = 0; f < frames; ++f)
    for (std::size_t g = 0; g < groups; g += 7)
      for (std::size_t q = 0; q < 32; ++q) set(f, g * 32 + q, 1 + rng() % 200);  // busy groups
  for (int k = 0; k < 12; ++k) {
    const std::size_t f = rng() % frames, g = rng() % groups;
    set(f, g * 32 + (k % 2 ? 31 : 0), c.elem == 1 ? 255u : 0x100u);  // a high byte only for u16/u32
  }
  return b;
}

std::vector<std::uint32_t> host_marks(const Case& c, const std::vector<std::uint8_t>& b, std::size_t frames) {
  const std::size_t wpt = encoded::LiveGroups::words_for(c.pixels, c.tile);
  std::vector<std::uint32_t> bits(encoded::LiveGroups::words_for(c.pixels, frames, c.tile), 0);
  for (std::size_t f = 0; f < frames; ++f)
    for (std::size_t p = 0; p < c.pixels; ++p) {
      bool nz = false;
      for (std::size_t k = 0; k < c.elem; ++k) nz |= b[(f * c.pixels + p) * c.elem + k] != 0;
      if (nz) bits[encoded::LiveGroups::word_of(f, p / 32, c.tile, wpt)] |= encoded::LiveGroups::bit_of(f, c.tile);
    }
  return bits;
}

}  // namespace

TEST(DecodeMarksCuda, MarksExactlyTheNonzeroGroupsOfEachTile) {
  QGPU_REQUIRE_CUDA();
  // 4096 pixels in blocks of 1024 / 4096 elements: whole words; 1152 pixels in blocks of 1000 (8 x 125 elements:
  // the byte path) and a partial block of 152; 2048 pixels in blocks of 4096 bytes with 1 byte elements.
  // Tiles of 64 and 100 frames: several chunks of 16 per tile (the last partial); 600: 38 chunks, two words.
  const Case cases[] = {{2, 4096, 1024, 16}, {2, 4096, 4096, 7},  {1, 4096, 4096, 5},  {4, 4096, 1024, 16},
                        {2, 1152, 1000, 16}, {1, 1152, 1000, 3},  {4, 1152, 1000, 10}, {1, 2048, 4096, 4},
                        {2, 1152, 1000, 64}, {1, 4096, 4096, 100}, {2, 1152, 1000, 600}};
  std::mt19937 rng(17);
  for (const Case& c : cases) {
    SCOPED_TRACE("elem " + std::to_string(c.elem) + " pixels " + std::to_string(c.pixels) + " block " +
                 std::to_string(c.block_elems) + " tile " + std::to_string(c.tile));
    const std::size_t frames = c.tile > 16 ? 2 * c.tile + 37 : 37;
    const auto dense = frames_with_sparse_groups(c, frames, rng);
    io::codec::BitshuffleParams bp;
    bp.elem_size = c.elem;
    bp.block_elems = c.block_elems;
    std::vector<std::uint64_t> table(3 * frames);
    std::vector<std::uint8_t> comp;
    for (std::size_t i = 0; i < frames; ++i) {
      const auto chunk = io::codec::encode_chunk(bp, c.pixels, dense.data() + i * c.pixels * c.elem);
      table[i] = comp.size();
      table[frames + i] = chunk.size();
      table[2 * frames + i] = i;
      comp.insert(comp.end(), chunk.begin(), chunk.end());
    }
    const io::cuda::DecodeGeometry geo{c.elem, c.pixels, c.block_elems};
    const std::size_t mb = geo.max_blocks();
    const std::vector<std::uint32_t> want = host_marks(c, dense, frames);
    std::vector<unsigned long long> want_totals(frames, 0);  // each frame's sum of counts, from the dense bytes
    for (std::size_t f = 0; f < frames; ++f)
      for (std::size_t p = 0; p < c.pixels; ++p)
        for (std::size_t k = 0; k < c.elem; ++k)
          want_totals[f] += static_cast<unsigned long long>(dense[(f * c.pixels + p) * c.elem + k]) << (8 * k);
    DeviceBuffer d_comp(comp.size()), d_tab(table.size() * 8), d_out(dense.size()), d_src(frames * mb * 8),
        d_len(frames * mb * 4), d_err(8), d_bits(want.size() * 4), d_totals(frames * 8);
    d_comp.upload(comp.data(), comp.size());
    d_tab.upload(table.data(), table.size() * 8);
    QGPU_CUDA(cudaMemset(d_err.data(), 0xff, 8));
    QGPU_CUDA(cudaMemset(d_bits.data(), 0, d_bits.bytes()));
    QGPU_CUDA(cudaMemset(d_totals.data(), 0, d_totals.bytes()));
    const auto* t = d_tab.as<std::uint64_t>();
    const io::cuda::DecodeBatch batch{d_comp.as<std::uint8_t>(), t, t + frames, t + 2 * frames, frames, 0};
    const io::cuda::DecodeScratch scratch{d_src.as<std::uint64_t>(), d_len.as<std::uint32_t>(), frames * mb};
    const encoded::LiveGroups live{d_bits.as<std::uint32_t>(), c.tile, encoded::LiveGroups::words_for(c.pixels, c.tile),
                                   d_totals.as<unsigned long long>()};
    io::cuda::decode_bitshuffle_lz4(batch, geo, d_out.data(), scratch, d_err.as<unsigned long long>(), nullptr,
                                    io::cuda::kDefaultDecodeVariant, live);
    QGPU_CUDA(cudaDeviceSynchronize());
    unsigned long long err = 0;
    d_err.download(&err, 8);
    EXPECT_EQ(err, ~0ull);
    std::vector<std::uint8_t> out(dense.size());
    d_out.download(out.data(), out.size());
    EXPECT_TRUE(out == dense) << "decoded frames differ";
    std::vector<std::uint32_t> got(want.size());
    d_bits.download(got.data(), got.size() * 4);
    EXPECT_EQ(got, want);
    std::vector<unsigned long long> got_totals(frames);
    d_totals.download(got_totals.data(), frames * 8);
    EXPECT_EQ(got_totals, want_totals);
    std::size_t marked = 0, chunks = 0;  // (group, chunk) pairs
    for (std::size_t t = 0; t * c.tile < frames; ++t)
      chunks += (std::min<std::size_t>(c.tile, frames - t * c.tile) + 15) / 16 * (c.pixels / 32);
    for (std::uint32_t w : want) marked += static_cast<std::size_t>(__builtin_popcount(w));
    EXPECT_LT(marked, chunks);  // the data leaves chunks unmarked: the comparison can fail
    EXPECT_GT(marked, 0u);
  }
}

TEST(DecodeMarksCuda, FramesOfNoWholeGroupsAreRefused) {
  QGPU_REQUIRE_CUDA();
  const io::cuda::DecodeGeometry geo{2, 40, 8};  // 40 pixels: not a multiple of 32
  DeviceBuffer bits(64), tab(24), src(64), len(64), err(8), out(80), comp(64);
  const auto* t = tab.as<std::uint64_t>();
  const io::cuda::DecodeBatch batch{comp.as<std::uint8_t>(), t, t + 1, t + 2, 1, 0};
  const io::cuda::DecodeScratch scratch{src.as<std::uint64_t>(), len.as<std::uint32_t>(), 8};
  const encoded::LiveGroups live{bits.as<std::uint32_t>(), 4, 1};
  EXPECT_THROW(io::cuda::decode_bitshuffle_lz4(batch, geo, out.data(), scratch, err.as<unsigned long long>(), nullptr,
                                               io::cuda::kDefaultDecodeVariant, live),
               InvalidArgument);
}
