// encoded-v1 CPU reference: exact round trips and queries against dense references on every dtype and shape.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <random>

#include "core/error.hpp"
#include "encoded_fixtures.hpp"
#include "io/sample/sample.hpp"
#include "resident/encoded/encoded_resident.hpp"
#include "resident/encoded/lane_decoder.hpp"
#include "resident/encoded/stream_codec.hpp"
#include "resident/encoded/sum_grid.hpp"
#include "support/temp_files.hpp"

using namespace qgpu;
using test::Dense;

namespace {

EncodedResident encode_cpu(const Dense& d, std::uint32_t tile, std::size_t batch = 0) {
  EncodedResident r(d.shape, d.dtype, Backend::cpu, tile);
  const std::size_t fb = d.frame_pixels() * dtype_size(d.dtype), n = d.shape.frames();
  if (batch == 0) batch = n;
  for (std::size_t f = 0; f < n; f += batch) r.append(d.bytes.data() + f * fb, std::min(batch, n - f));
  return r;
}

// CoM-style sums (weights det_row, det_col over every pixel, and a third weighting) in one call.
void expect_moments(const EncodedResident& r, const Dense& d) {
  std::vector<std::uint32_t> all, rows, cols, ones;
  for (std::uint32_t p = 0; p < d.frame_pixels(); ++p) {
    all.push_back(p);
    rows.push_back(p / static_cast<std::uint32_t>(d.shape.det_cols));
    cols.push_back(p % static_cast<std::uint32_t>(d.shape.det_cols));
    ones.push_back(1);
  }
  const auto m = r.masked_sums(all, {rows, cols, ones});
  ASSERT_EQ(m.size(), 3u);
  EXPECT_EQ(m[0], test::ref_masked_sum(d, all, rows));
  EXPECT_EQ(m[1], test::ref_masked_sum(d, all, cols));
  EXPECT_EQ(m[2], test::ref_totals(d));
}

// Every query of the resident equals the dense reference.
void expect_matches(const EncodedResident& r, const Dense& d) {
  ASSERT_TRUE(r.complete());
  EXPECT_EQ(r.dense_bytes(), d.bytes.size());
  const HostArray4D all = r.read();
  EXPECT_EQ(all.shape, d.shape);
  EXPECT_TRUE(all.bytes == d.bytes) << "full decode differs from the dense data";
  EXPECT_EQ(r.frame_totals(), test::ref_totals(d));
  EXPECT_EQ(r.sum_pattern(), test::ref_sum_pattern(d));
  std::vector<std::uint32_t> px, w;
  test::some_pixels(d.frame_pixels(), px, w);
  EXPECT_EQ(r.masked_sum(px, w), test::ref_masked_sum(d, px, w));
  // A uniform mask over the pixels not listed (weight 0xffffffff: products wrap modulo 2^64 as in the reference).
  std::vector<char> listed(d.frame_pixels(), 0);
  for (std::uint32_t p : px) listed[p] = 1;
  std::vector<std::uint32_t> others, once;
  for (std::uint32_t p = 0; p < d.frame_pixels(); ++p) (listed[p] ? once : others).push_back(p);
  for (const std::uint32_t u : {1u, 0xffffffffu})
    EXPECT_EQ(r.complement_sum(once, u), test::ref_masked_sum(d, others, std::vector<std::uint32_t>(others.size(), u)));
  EXPECT_TRUE(r.pixels(px) == test::ref_pixels(d, px)) << "pixel gather differs";
  expect_moments(r, d);
  const std::size_t n = d.shape.frames();
  for (std::size_t f : {std::size_t{0}, n / 2, n - 1}) EXPECT_EQ(r.frame(f), test::ref_frame(d, f)) << "frame " << f;
  const Shape4D& s = d.shape;
  const Region sr{s.scan_rows / 3, s.scan_cols / 4, s.scan_rows - s.scan_rows / 3, s.scan_cols / 2 + 1};
  const Region kr{1, s.det_cols / 2, s.det_rows - 1, s.det_cols - s.det_cols / 2};
  const HostArray4D part = r.read(sr, kr);
  EXPECT_EQ(part.shape, (Shape4D{sr.rows, sr.cols, kr.rows, kr.cols}));
  EXPECT_TRUE(part.bytes == test::ref_region(d, sr, kr)) << "region read differs";
}

std::uint8_t model_of(const encoded::cpu::HostTile& t, std::size_t p) {
  return t.dir[p] == t.dir[p + 1] ? encoded::kZero : t.payload[t.dir[p]];
}

Dense filled(const Shape4D& shape, DType dtype, std::uint32_t v) {
  Dense d{shape, dtype, std::vector<std::uint8_t>(shape.elements() * dtype_size(dtype))};
  for (std::size_t f = 0; f < shape.frames(); ++f)
    for (std::size_t p = 0; p < shape.frame_pixels(); ++p) d.set(f, p, v);
  return d;
}

}  // namespace

TEST(EncodedCpu, ExactOnEveryDtypeOddDetectorAndPartialTile) {
  for (DType t : {DType::u8, DType::u16, DType::u32}) {
    SCOPED_TRACE(dtype_name(t));
    const Dense d = test::mixed({9, 15, 7, 5}, t);  // 135 frames: tiles of 64, 64 and 7
    const EncodedResident r = encode_cpu(d, 64);
    EXPECT_EQ(r.tiles().size(), 3u);
    EXPECT_EQ(r.tiles()[2].len, 7u);
    expect_matches(r, d);
    // Every stream model occurs in this data.
    int seen[5] = {};
    for (std::size_t k = 0; k < r.tiles().size(); ++k) {
      const auto tb = r.tile_bytes(k);
      for (std::size_t p = 0; p < d.frame_pixels(); ++p) ++seen[model_of(tb, p)];
    }
    for (int m = 0; m < 5; ++m) EXPECT_GT(seen[m], 0) << "model " << m << " never chosen";
  }
}

TEST(EncodedCpu, DefaultTileWithScanNotAMultipleOfIt) {
  const Dense d = test::mixed({23, 31, 11, 13}, DType::u16, 5);  // 713 frames: 512 + 201
  const EncodedResident r = encode_cpu(d, encoded::kDefaultTile);
  EXPECT_EQ(r.tiles().size(), 2u);
  EXPECT_EQ(r.tiles()[1].len, 201u);
  expect_matches(r, d);
}

TEST(EncodedCpu, ExtremeTileLengths) {
  // Tiles of one position (every stream one value), the longest tile (4096: 16-bit histograms at their limit),
  // and a dataset shorter than one tile.
  for (DType t : {DType::u8, DType::u32}) {
    SCOPED_TRACE(dtype_name(t));
    const Dense small = test::mixed({3, 5, 4, 5}, t, 6);
    expect_matches(encode_cpu(small, 1, 4), small);
    expect_matches(encode_cpu(small, 512), small);
    const Dense longer = test::mixed({65, 64, 3, 3}, t, 7);  // 4160 frames: 4096 + 64
    const EncodedResident r = encode_cpu(longer, encoded::kMaxTile, 1000);
    EXPECT_EQ(r.tiles().size(), 2u);
    expect_matches(r, longer);
  }
  // A 4096-long stream of one symbol except one escape: the histogram counts reach 4095.
  Dense one = filled({64, 64, 2, 2}, DType::u16, 2);
  one.set(100, 0, 60000);
  one.set(7, 1, 1);
  expect_matches(encode_cpu(one, encoded::kMaxTile), one);
}

TEST(EncodedCpu, BatchesOfAnySizeGiveTheSameBytes) {
  const Dense d = test::mixed({6, 11, 9, 8}, DType::u16, 3);  // 66 frames, tiles of 16
  const EncodedResident whole = encode_cpu(d, 16);
  for (std::size_t batch : {std::size_t{1}, std::size_t{7}, std::size_t{11}, std::size_t{16}, std::size_t{40}}) {
    SCOPED_TRACE(batch);
    const EncodedResident r = encode_cpu(d, 16, batch);
    ASSERT_EQ(r.tiles().size(), whole.tiles().size());
    for (std::size_t k = 0; k < r.tiles().size(); ++k) {
      EXPECT_EQ(r.tile_bytes(k).payload, whole.tile_bytes(k).payload);
      EXPECT_EQ(r.tile_bytes(k).dir, whole.tile_bytes(k).dir);
    }
    EXPECT_EQ(r.resident_bytes(), whole.resident_bytes());
    expect_matches(r, d);
  }
}

TEST(EncodedCpu, AllZeroKeepsOnlyDirectoryAndTotals) {
  const Dense d = filled({4, 10, 6, 7}, DType::u32, 0);
  const EncodedResident r = encode_cpu(d, 16);
  const std::size_t P = 42, tiles = 3;
  EXPECT_EQ(r.resident_bytes(), tiles * (P + 1) * 4 + 40 * 8 + P * 8);
  for (std::size_t k = 0; k < tiles; ++k) EXPECT_TRUE(r.tile_bytes(k).payload.empty());
  expect_matches(r, d);
}

TEST(EncodedCpu, ConstantAndSaturatedData) {
  for (DType t : {DType::u8, DType::u16, DType::u32}) {
    SCOPED_TRACE(dtype_name(t));
    const std::uint32_t mx = test::max_count(t);
    const Dense sat = filled({3, 7, 5, 6}, t, mx);
    const EncodedResident r = encode_cpu(sat, 8);
    const auto tb = r.tile_bytes(0);
    for (std::size_t p = 0; p < 30; ++p) EXPECT_EQ(model_of(tb, p), encoded::kConstant);
    expect_matches(r, sat);
    EXPECT_EQ(r.frame_totals()[0], 30ull * mx);
    // Zero-or-max at random: the widest raw and rANS escapes.
    Dense mixed = sat;
    std::mt19937 rng(9);
    for (std::size_t f = 0; f < 21; ++f)
      for (std::size_t p = 0; p < 30; ++p) mixed.set(f, p, rng() & 1 ? mx : 0);
    expect_matches(encode_cpu(mixed, 8), mixed);
  }
}

TEST(EncodedCpu, SparseAndRandomData) {
  // Sparse: a few counts per stream, values 1 and large.
  Dense sparse = filled({8, 8, 12, 12}, DType::u16, 0);
  sparse.set(0, 0, 1);
  sparse.set(63, 0, 65535);
  sparse.set(17, 5, 2);
  sparse.set(40, 143, 1);
  const EncodedResident rs = encode_cpu(sparse, 64);
  EXPECT_EQ(model_of(rs.tile_bytes(0), 0), encoded::kSparse);
  EXPECT_EQ(model_of(rs.tile_bytes(0), 1), encoded::kZero);
  expect_matches(rs, sparse);
  // Uniform random 32-bit counts cannot compress: raw streams, about the dense size.
  Dense rnd{{6, 6, 10, 10}, DType::u32, std::vector<std::uint8_t>(3600 * 4)};
  std::mt19937 rng(4);
  for (auto& b : rnd.bytes) b = static_cast<std::uint8_t>(rng());
  const EncodedResident rr = encode_cpu(rnd, 36);
  for (std::size_t p = 0; p < 100; ++p) EXPECT_EQ(model_of(rr.tile_bytes(0), p), encoded::kRaw);
  EXPECT_LT(rr.resident_bytes(), rnd.bytes.size() + 100 * (4 + 7) + 36 * 8 + 100 * 8 + 8);
  expect_matches(rr, rnd);
}

TEST(EncodedCpu, SimulatedSampleSmallerThanItsBitshuffleLz4File) {
  sample::SampleSpec s;
  s.scan_rows = s.scan_cols = 32;
  s.det_rows = s.det_cols = 96;
  Dense d{{32, 32, 96, 96}, DType::u16, std::vector<std::uint8_t>(32 * 32 * 96 * 96 * 2)};
  sample::simulate_frames(s, 0, 1024, d.bytes.data());
  const EncodedResident r = encode_cpu(d, encoded::kDefaultTile, 32);  // batches of whole scan rows
  expect_matches(r, d);
  const auto file = std::filesystem::file_size(test::write_small_sample("sample.h5", s));
  const double ratio = double(r.dense_bytes()) / double(r.resident_bytes());
  std::cout << "[ sample 32x32x96x96 uint16 ] dense " << r.dense_bytes() << " B, encoded " << r.resident_bytes()
            << " B (" << ratio << "x), bitshuffle+LZ4 file " << file << " B ("
            << double(r.dense_bytes()) / double(file) << "x)\n";
  RecordProperty("encoded_ratio", std::to_string(ratio));
  EXPECT_LT(r.resident_bytes(), file);
}

TEST(EncodedCpu, StreamModelsChosenBySize) {
  std::vector<std::uint8_t> slot(encoded::stream_slot_bytes(512));
  std::uint64_t sum = 0;
  const auto encode = [&](const std::vector<std::uint32_t>& v) {
    const auto get = [&](std::uint32_t i) { return v[i]; };
    const std::uint32_t n = encoded::encode_stream(get, static_cast<std::uint32_t>(v.size()), slot.data(), &sum);
    std::vector<std::uint32_t> back(v.size(), 0);
    EXPECT_TRUE(encoded::decode_stream(slot.data(), n, static_cast<std::uint32_t>(v.size()), 0,
                                       static_cast<std::uint32_t>(v.size()),
                                       [&](std::uint32_t i, std::uint32_t x) { back[i] = x; }));
    EXPECT_EQ(back, v);
    std::uint64_t ref = 0;
    for (auto x : v) ref += x;
    EXPECT_EQ(sum, ref);
    return std::pair<std::uint8_t, std::uint32_t>{n ? slot[0] : encoded::kZero, n};
  };
  EXPECT_EQ(encode(std::vector<std::uint32_t>(512, 0)).second, 0u);
  EXPECT_EQ(encode(std::vector<std::uint32_t>(512, 7)), (std::pair<std::uint8_t, std::uint32_t>{encoded::kConstant, 2}));
  std::vector<std::uint32_t> one(512, 0);
  one[300] = 1;
  EXPECT_EQ(encode(one), (std::pair<std::uint8_t, std::uint32_t>{encoded::kSparse, 4}));  // model, m, gap varint x2
  std::mt19937 rng(2);
  std::poisson_distribution<std::uint32_t> pois(2.0);
  std::vector<std::uint32_t> p2(512);
  for (auto& x : p2) x = pois(rng);
  const auto [m2, n2] = encode(p2);
  EXPECT_EQ(m2, encoded::kRans);
  EXPECT_LT(n2, 512u * 3 / 8);  // below a 3-bit packing (entropy of Poisson(2) is ~2.1 bits)
  p2[100] = 4000000000u;  // an outlier goes through the escape list
  EXPECT_EQ(encode(p2).first, encoded::kRans);
  std::vector<std::uint32_t> u16(512);
  for (auto& x : u16) x = rng() & 0xffff;
  EXPECT_EQ(encode(u16).first, encoded::kRaw);
  std::vector<std::uint32_t> single{5};
  EXPECT_EQ(encode(single).first, encoded::kConstant);
}

TEST(EncodedCpu, MalformedStreamsAreRejected) {
  std::vector<std::uint32_t> v(512);
  std::mt19937 rng(1);
  std::poisson_distribution<std::uint32_t> pois(3.0);
  for (auto& x : v) x = pois(rng);
  std::vector<std::uint8_t> slot(encoded::stream_slot_bytes(512));
  std::uint64_t sum = 0;
  const std::uint32_t n = encoded::encode_stream([&](std::uint32_t i) { return v[i]; }, 512, slot.data(), &sum);
  ASSERT_EQ(slot[0], encoded::kRans);
  const auto ignore = [](std::uint32_t, std::uint32_t) {};
  EXPECT_TRUE(encoded::decode_stream(slot.data(), n, 512, 0, 512, ignore));
  EXPECT_FALSE(encoded::decode_stream(slot.data(), n / 2, 512, 0, 512, ignore)) << "truncated";
  slot[0] = 9;
  EXPECT_FALSE(encoded::decode_stream(slot.data(), n, 512, 0, 512, ignore)) << "unknown model";
  // A rANS state outside [kRansL, kRansL << 8) is rejected by every decoder before any symbol (a state of 0 over
  // zero bytes once made the reference read bytes forever).
  for (const std::uint32_t state : {0u, 1u, encoded::kRansL - 1, encoded::kRansL << 8, 0xffffffffu}) {
    // base 0, K 1, frequencies 4095 and 1, no escapes, then the state
    std::vector<std::uint8_t> s = {encoded::kRans, 0, 1, 0xff, 0x1f, 1, 0};
    for (int k = 0; k < 4; ++k) s.push_back(static_cast<std::uint8_t>(state >> (8 * k)));
    s.resize(s.size() + 64, 0);
    const auto size = static_cast<std::uint32_t>(s.size());
    EXPECT_FALSE(encoded::decode_stream(s.data(), size, 16, 0, 16, ignore)) << "state " << state;
    EXPECT_FALSE(encoded::StreamCursor<>{}.open(s.data(), size, 16)) << "state " << state;
    std::vector<std::uint32_t> tables(encoded::LaneDecoder::kWords * 32);
    encoded::LaneDecoder dec;
    dec.place(tables.data(), 0);
    EXPECT_FALSE(dec.open(s.data(), size, 16)) << "state " << state;
    s[7] = 0;  // the smallest valid state kRansL (bytes 7..10, little endian): accepted
    s[8] = 0;
    s[9] = 0x80;
    s[10] = 0;
    EXPECT_TRUE(encoded::decode_stream(s.data(), size, 16, 0, 16, ignore));
  }
  // Through the queries: a corrupted tile raises FormatError naming it.
  const Dense d = test::mixed({2, 8, 3, 3}, DType::u16);
  const EncodedResident r = encode_cpu(d, 16);
  encoded::cpu::HostTile bad = r.tile_bytes(0);
  for (std::size_t p = 0; p < 9; ++p)
    if (bad.dir[p + 1] > bad.dir[p]) bad.payload[bad.dir[p]] = 0x7f;
  EXPECT_THROW(encoded::cpu::decode_all(r.layout(), {bad.ref()}), FormatError);
}

// decode_order: a permutation of the list's positions (repeated pixels kept), densest pixels (sum pattern) first
// up to the density classes of 1/8 of a power of two; a pixel outside the frame raises.
TEST(EncodedCpu, DecodeOrderPutsDensePixelsFirst) {
  const Dense d = test::mixed({6, 40, 9, 11}, DType::u16, 4);
  const EncodedResident r = encode_cpu(d, 64);
  const std::vector<std::uint64_t> pattern = r.sum_pattern();
  std::vector<std::uint32_t> list;
  for (std::uint32_t p = 0; p < d.frame_pixels(); ++p) list.push_back((p * 37u) % 99u);
  list.push_back(5);
  list.push_back(5);
  const std::vector<std::uint32_t> order = r.decode_order(list);
  ASSERT_EQ(order.size(), list.size());
  std::vector<std::uint32_t> seen(list.size(), 0);
  for (const std::uint32_t j : order) ++seen.at(j);
  EXPECT_TRUE(std::all_of(seen.begin(), seen.end(), [](std::uint32_t c) { return c == 1; })) << "not a permutation";
  for (std::size_t i = 0; i + 1 < order.size(); ++i) {
    const std::uint64_t a = pattern[list[order[i]]], b = pattern[list[order[i + 1]]];
    EXPECT_LE(b, a + a / 4 + 8) << "entry " << i + 1 << " is much denser than the one before it";
  }
  EXPECT_GT(pattern[list[order.front()]], 4 * pattern[list[order.back()]] + 1);  // the data has a range of densities
  EXPECT_THROW(r.decode_order({static_cast<std::uint32_t>(d.frame_pixels())}), RegionError);
  // A cost split's list comes out in decode order already (the GPU sums upload it without sorting); a list in pixel
  // order is not in decode order here, nor one with a repeat.
  std::vector<std::uint8_t> own(d.frame_pixels(), 0);
  for (std::size_t p = 0; p < own.size(); p += 3) own[p] = 1;
  const EncodedResident::PixelSplit split = r.split_by_cost(own.data());
  EXPECT_TRUE(r.in_decode_order(split.pixels()));
  for (const std::uint32_t p : split.pixels()) EXPECT_EQ(own[p], split.rest_cheaper() ? 0 : 1) << p;
  EXPECT_EQ(split.pixels().size(), split.rest_cheaper() ? d.frame_pixels() - (d.frame_pixels() + 2) / 3
                                                        : (d.frame_pixels() + 2) / 3);
  std::vector<std::uint32_t> all(d.frame_pixels());
  for (std::uint32_t p = 0; p < all.size(); ++p) all[p] = p;
  EXPECT_FALSE(r.in_decode_order(all));
  std::vector<std::uint32_t> repeat = split.pixels();
  repeat.push_back(repeat.back());
  EXPECT_FALSE(r.in_decode_order(repeat));
  EXPECT_FALSE(r.in_decode_order({static_cast<std::uint32_t>(d.frame_pixels())}));
}

// split_by_cost against the cost rule counted here (cost of a pixel = min(its sum, frames)), for masks given as a
// 0/1 mask, as their pixels (repeats count once) and as the pixels they leave out; the side chosen and its list in
// decode order; uniform_sum equal to the weighted sums of the mask's pixels whichever side it decodes.
TEST(EncodedCpu, CostSplitFollowsTheCostRuleAndSumsTheMask) {
  const Dense d = test::mixed({6, 40, 9, 11}, DType::u16, 4);
  const EncodedResident r = encode_cpu(d, 64);
  const std::vector<std::uint64_t>& pattern = r.sum_pattern();
  const std::uint64_t frames = d.shape.frames();
  const std::size_t n = d.frame_pixels();
  const std::vector<std::uint32_t> by_rank = [&] {
    std::vector<std::uint32_t> all(n), order;
    for (std::uint32_t p = 0; p < n; ++p) all[p] = p;
    order = r.decode_order(all);
    for (auto& j : order) j = all[j];
    return order;
  }();
  int chose_rest = 0, chose_own = 0;
  for (std::uint32_t seed = 0; seed < 40; ++seed) {
    std::vector<std::uint8_t> own(n, 0);
    std::vector<std::uint32_t> listed, left_out;
    for (std::uint32_t p = 0; p < n; ++p) {
      own[p] = ((p * 2654435761u + seed * 97u) >> 7) % 40 < seed;  // from none to nearly all pixels
      (own[p] ? listed : left_out).push_back(p);
    }
    std::uint64_t cost_own = 0, cost_rest = 0;
    for (std::uint32_t p = 0; p < n; ++p) (own[p] ? cost_own : cost_rest) += std::min(pattern[p], frames);
    for (const bool tie_to_own : {true, false}) {
      const bool rest_cheaper = cost_rest < cost_own || (cost_rest == cost_own && !tie_to_own);
      std::vector<std::uint32_t> expect;
      for (const std::uint32_t p : by_rank)
        if ((own[p] != 0) != rest_cheaper) expect.push_back(p);
      std::vector<std::uint32_t> repeated = listed;
      if (!listed.empty()) repeated.push_back(listed.front());
      for (const EncodedResident::PixelSplit& s :
           {r.split_by_cost(own.data(), tie_to_own), r.split_by_cost(repeated, true, tie_to_own),
            r.split_by_cost(left_out, false, tie_to_own)}) {
        EXPECT_EQ(s.rest_cheaper(), rest_cheaper) << "seed " << seed;
        EXPECT_EQ(s.pixels(), expect) << "seed " << seed;
      }
    }
    const EncodedResident::PixelSplit s = r.split_by_cost(own.data());
    (s.rest_cheaper() ? chose_rest : chose_own)++;
    const std::uint32_t weight = 3 + seed;
    const std::vector<std::uint64_t> got = r.uniform_sum(s, weight);
    ASSERT_EQ(got.size(), frames);
    for (std::size_t f = 0; f < frames; ++f) {
      std::uint64_t want = 0;
      for (const std::uint32_t p : listed) want += std::uint64_t{weight} * d.at(f, p);
      ASSERT_EQ(got[f], want) << "seed " << seed << " frame " << f;
    }
  }
  EXPECT_GT(chose_rest, 0);
  EXPECT_GT(chose_own, 0);
  EXPECT_THROW(r.split_by_cost({static_cast<std::uint32_t>(n)}, true), RegionError);
}

TEST(EncodedCpu, BadRequestsRaiseTypedErrors) {
  const Dense d = test::mixed({3, 4, 5, 6}, DType::u16);
  EXPECT_THROW(EncodedResident(d.shape, DType::f32, Backend::cpu), DTypeError);
  EXPECT_THROW(EncodedResident(d.shape, DType::u16, Backend::cpu, 0), InvalidArgument);
  EXPECT_THROW(EncodedResident(d.shape, DType::u16, Backend::cpu, encoded::kMaxTile + 1), InvalidArgument);
  EXPECT_THROW(EncodedResident({0, 4, 5, 6}, DType::u16, Backend::cpu), InvalidArgument);
  EncodedResident r(d.shape, d.dtype, Backend::cpu, 4);
  r.append(d.bytes.data(), 5);
  EXPECT_FALSE(r.complete());
  EXPECT_THROW(r.frame_totals(), InvalidArgument);
  EXPECT_THROW(r.append(d.bytes.data(), 8), InvalidArgument);  // 7 remain
  r.append(d.bytes.data() + 5 * 60, 7);
  expect_matches(r, d);
  EXPECT_THROW(r.frame(12), RegionError);
  EXPECT_THROW(r.read({2, 0, 2, 4}), RegionError);
  EXPECT_THROW(r.read({}, {0, 5, 5, 2}), RegionError);
  EXPECT_THROW(r.masked_sum({30}, {1}), RegionError);
  EXPECT_THROW(r.masked_sum({1, 2}, {1}), InvalidArgument);
  EXPECT_THROW(r.device_tiles(), Error);
  EXPECT_EQ(r.to_host().tiles().data(), r.tiles().data());  // already on the host: the same storage
}

namespace {

// Decodes stream s (size bytes, n values) with decode_stream and with a StreamCursor over the given tables;
// returns whether the cursor accepted the stream and gave every value equal.
template <class Tables>
::testing::AssertionResult cursor_matches(const std::uint8_t* s, std::uint32_t size, std::uint32_t n, Tables tab) {
  std::vector<std::uint32_t> want(n, 0);
  if (!encoded::decode_stream(s, size, n, 0, n, [&](std::uint32_t i, std::uint32_t v) { want[i] = v; }))
    return ::testing::AssertionFailure() << "decode_stream rejects the stream";
  encoded::StreamCursor<Tables> c;
  c.tab = tab;
  if (!c.open(s, size, n)) return ::testing::AssertionFailure() << "cursor rejects the stream";
  for (std::uint32_t i = 0; i < n; ++i) {
    const std::uint32_t v = c.next();
    if (v != want[i]) return ::testing::AssertionFailure() << "position " << i << ": " << v << " != " << want[i];
  }
  if (c.next() != 0 || !c.ok) return ::testing::AssertionFailure() << "cursor past the end";
  return ::testing::AssertionSuccess();
}

}  // namespace

// The lockstep decoder of the GPU masked sums (StreamCursor) gives the same values as decode_stream for every
// stream of every model, with its tables in the cursor or strided (one column of a shared array, as on the GPU).
TEST(EncodedCpu, StreamCursorEqualsDecodeStream) {
  std::size_t models[5] = {0, 0, 0, 0, 0}, strided = 0;
  for (DType t : {DType::u8, DType::u16, DType::u32})
    for (std::uint32_t tile : {1u, 7u, 64u, 512u}) {
      SCOPED_TRACE(dtype_name(t) + " tile " + std::to_string(tile));
      const Dense d = test::mixed({9, 11, 5, 9}, t, tile);  // 99 frames, 45 pixels
      const EncodedResident r = encode_cpu(d, tile);
      for (std::size_t k = 0; k < r.tiles().size(); ++k) {
        const encoded::cpu::HostTile h = r.tile_bytes(k);
        for (std::size_t p = 0; p < d.frame_pixels(); ++p) {
          const std::uint8_t* s = h.payload.data() + h.dir[p];
          const std::uint32_t size = h.dir[p + 1] - h.dir[p];
          ++models[size ? s[0] : 0];
          ASSERT_TRUE(cursor_matches(s, size, h.len, encoded::LocalTables{})) << "tile " << k << " pixel " << p;
          std::vector<std::uint32_t> shared(encoded::StridedTables::kWords * 32, 0xa5a5a5a5u);
          const encoded::StridedTables st{shared.data() + 5, 32};
          if (encoded::rans_alphabet(s, size) <= encoded::StridedTables::kMaxK) {
            strided += size && s[0] == encoded::kRans;
            ASSERT_TRUE(cursor_matches(s, size, h.len, st)) << "strided, tile " << k << " pixel " << p;
          } else {
            encoded::StreamCursor<encoded::StridedTables> c;
            c.tab = st;
            EXPECT_FALSE(c.open(s, size, h.len)) << "an alphabet beyond the strided tables is refused";
          }
        }
      }
    }
  for (int m = 0; m < 5; ++m) EXPECT_GT(models[m], 0u) << "model " << m << " never appeared";
  EXPECT_GT(strided, 0u);
}

TEST(EncodedCpu, StreamCursorRejectsMalformedStreams) {
  std::vector<std::uint32_t> v(512);
  std::mt19937 rng(4);
  std::poisson_distribution<std::uint32_t> pois(3.0);
  for (auto& x : v) x = pois(rng);
  v[77] = 100000;  // an escape
  std::vector<std::uint8_t> slot(encoded::stream_slot_bytes(512));
  std::uint64_t sum = 0;
  const std::uint32_t n = encoded::encode_stream([&](std::uint32_t i) { return v[i]; }, 512, slot.data(), &sum);
  ASSERT_EQ(slot[0], encoded::kRans);
  EXPECT_TRUE(cursor_matches(slot.data(), n, 512, encoded::LocalTables{}));
  encoded::StreamCursor<> c;
  ASSERT_TRUE(c.open(slot.data(), n / 2, 512));  // the header is whole, the rANS bytes are cut
  for (int i = 0; i < 512; ++i) c.next();
  EXPECT_FALSE(c.ok) << "truncated";
  std::vector<std::uint32_t> sp(512, 0);
  sp[3] = 1;
  sp[400] = 9;
  const std::uint32_t ns = encoded::encode_stream([&](std::uint32_t i) { return sp[i]; }, 512, slot.data(), &sum);
  ASSERT_EQ(slot[0], encoded::kSparse);
  EXPECT_TRUE(cursor_matches(slot.data(), ns, 512, encoded::LocalTables{}));
  encoded::StreamCursor<> short_n;
  ASSERT_TRUE(short_n.open(slot.data(), ns, 300) || !short_n.ok);
  for (int i = 0; i < 300; ++i) short_n.next();
  EXPECT_FALSE(short_n.ok) << "a sparse position past n";
  slot[0] = 9;
  EXPECT_FALSE(encoded::StreamCursor<>{}.open(slot.data(), ns, 512)) << "unknown model";
}

// The masked-sum kernel's grid (host arithmetic): blocks cover the pixel list in multiples of the warp's group (32
// pixels, or 64 for fast_ilp), at most 65535 chunks, and the chunk count minimises waves x rounds (checked against
// every chunk count by brute force).
TEST(EncodedCpu, MaskedSumGridCoversThePixelsAndBalancesTheWork) {
  using encoded::plan_sum_grid;
  const auto cost = [](std::size_t tiles, std::size_t npix, std::size_t warps, std::size_t slots, std::size_t per,
                       std::size_t group) {
    const std::size_t groups = (npix + group - 1) / group, gpb = per / group, chunks = (groups + gpb - 1) / gpb;
    const std::size_t rounds = (gpb + warps - 1) / warps, waves = (tiles * chunks + slots - 1) / slots;
    return double(waves) * (double(rounds) + 0.125);
  };
  for (std::size_t group : {32u, 64u})
    for (std::size_t tiles : {1u, 7u, 512u, 4096u})
      for (std::size_t npix : {1u, 31u, 32u, 33u, 3228u, 20424u, 36864u})
        for (std::size_t slots : {1u, 264u, 396u}) {
          SCOPED_TRACE(std::to_string(tiles) + " tiles, " + std::to_string(npix) + " pixels, " +
                       std::to_string(slots) + " slots, group " + std::to_string(group));
          const std::size_t warps = group == 32 ? 8 : 4;
          const encoded::SumGrid g = plan_sum_grid(tiles, npix, warps, slots, group);
          ASSERT_GT(g.per_block, 0u);
          EXPECT_EQ(g.per_block % group, 0u);
          EXPECT_GE(g.chunks * g.per_block, npix);
          EXPECT_LT((g.chunks - 1) * g.per_block, npix);
          EXPECT_LE(g.chunks, 65535u);
          double best = -1;
          for (std::size_t per = group; per <= (npix + group - 1) / group * group; per += group) {
            const double c = cost(tiles, npix, warps, slots, per, group);
            if (best < 0 || c < best) best = c;
          }
          EXPECT_EQ(cost(tiles, npix, warps, slots, g.per_block, group), best);
        }
  // The BF disk of the 512x512 sample (512 tiles, 3228 pixels = 101 groups, 2 blocks of 8 warps on 132 SMs): one
  // chunk per tile, 13 rounds per warp in 2 waves.
  EXPECT_EQ(plan_sum_grid(512, 3228, 8, 264).chunks, 1u);
  EXPECT_EQ(plan_sum_grid(512, 3228, 8, 264).per_block, 3232u);
  // One tile: the fewest chunks that give every warp one group (101 groups: 13 chunks of 8 groups).
  EXPECT_EQ(plan_sum_grid(1, 3228, 8, 264).chunks, 13u);
  EXPECT_EQ(plan_sum_grid(1, 3228, 8, 264).per_block, 256u);
}

namespace {

// Values of one stream by the reference decoder (decode_stream); false when it rejects the stream.
bool reference_values(const std::uint8_t* s, std::uint32_t size, std::uint32_t n, std::vector<std::uint32_t>& out) {
  out.assign(n, 0);
  return encoded::decode_stream(s, size, n, 0, n, [&](std::uint32_t i, std::uint32_t v) { out[i] = v; });
}

// Values of one stream by the masked-sum kernel's LaneDecoder (tables in a strided column, lane 5 of 32, as on
// the GPU; the stream copied into an exact-size buffer, so that a read past its end is a heap overflow under the
// sanitizers); false when it rejects the stream (open or a `bad` flag).
bool lane_values(const std::uint8_t* s, std::uint32_t size, std::uint32_t n, std::vector<std::uint32_t>& out) {
  const std::unique_ptr<std::uint8_t[]> copy(new std::uint8_t[std::max<std::uint32_t>(size, 1)]);
  if (size) std::memcpy(copy.get(), s, size);
  std::vector<std::uint32_t> tables(encoded::LaneDecoder::kWords * 32, 0xdeadbeefu);
  encoded::LaneDecoder dec;
  dec.place(tables.data(), 5);
  out.assign(n, 0);
  bool bad = !dec.open(copy.get(), size, n);
  // As the kernel's lockstep path: rANS and constant streams through rans_next (a constant as a one-symbol rANS
  // stream), raw through next().
  const bool lockstep = dec.model == encoded::kRans || dec.model == encoded::kConstant;
  for (std::uint32_t i = 0; i < n; ++i) out[i] = lockstep ? dec.rans_next(bad) : dec.next(i, bad);
  dec.finish(bad);
  return !bad;
}

}  // namespace

// The masked-sum kernel's stream decoder (host and device code) gives the reference decoder's values for every
// stream it takes (constant, raw, rANS with alphabets up to 30, with escapes and with symbol boundaries inside
// coarse slots), and the reference's verdict on every truncation and on random byte changes of those streams.
TEST(EncodedCpu, LaneDecoderEqualsReferenceDecoder) {
  std::mt19937_64 rng(42);
  std::size_t taken = 0, rans = 0, raw = 0, constant = 0, escaped = 0, truncations = 0, mutations = 0;
  std::size_t long_escapes = 0;  // escapes of several varint bytes
  std::vector<std::uint32_t> values, want, got;
  std::vector<std::uint8_t> slot;
  for (std::uint32_t n : {1u, 2u, 5u, 33u, 100u, 512u, 4096u})
    for (int dist = 0; dist < 12; ++dist)
      for (int rep = 0; rep < 6; ++rep) {
        values.assign(n, 0);
        const double mean = 0.2 + 0.9 * dist * (rep + 1);
        std::poisson_distribution<std::uint32_t> poisson(mean);
        std::uniform_int_distribution<std::uint32_t> any(0, 0xffffffffu), small(0, 2u + dist * 3u);
        std::bernoulli_distribution outlier(0.02);
        for (std::uint32_t i = 0; i < n; ++i) {
          switch (dist % 4) {
            case 0: values[i] = poisson(rng); break;                                           // low counts
            case 1: values[i] = poisson(rng) + (outlier(rng) ? 1000u + rep * 100000u : 0u); break;  // escapes
            case 2: values[i] = 7u + small(rng); break;                                       // flat alphabets
            default: values[i] = rep == 0 ? 9u : rep == 1 ? any(rng) : (any(rng) >> (8 * (rep % 4)));  // const, raw
          }
        }
        slot.assign(encoded::stream_slot_bytes(n), 0);
        std::uint64_t sum = 0;
        const std::uint32_t size =
            encoded::encode_stream([&](std::uint32_t i) { return values[i]; }, n, slot.data(), &sum);
        if (!encoded::LaneDecoder::takes(slot.data(), size)) continue;
        ++taken;
        rans += slot[0] == encoded::kRans;
        raw += slot[0] == encoded::kRaw;
        constant += slot[0] == encoded::kConstant;
        ASSERT_TRUE(reference_values(slot.data(), size, n, want));
        ASSERT_EQ(want, values);
        ASSERT_TRUE(lane_values(slot.data(), size, n, got)) << "n " << n << " dist " << dist << " rep " << rep;
        ASSERT_EQ(got, values) << "n " << n << " dist " << dist << " rep " << rep;
        if (slot[0] == encoded::kRans) {
          encoded::ByteReader rd{slot.data() + 1, slot.data() + size};
          const std::uint32_t base = rd.varint(), K = rd.byte();
          for (std::uint32_t v : values) {
            escaped += v - base >= K;
            long_escapes += v - base >= K && v - base - K >= 128;  // multi-byte varints
          }
        }
        // Every truncation: the same verdict (and the same values where both accept).
        for (std::uint32_t cut = 1; cut <= size && cut <= 24; ++cut) {
          const bool r = reference_values(slot.data(), size - cut, n, want);
          const bool l = encoded::LaneDecoder::takes(slot.data(), size - cut) &&
                         lane_values(slot.data(), size - cut, n, got);
          if (!encoded::LaneDecoder::takes(slot.data(), size - cut)) continue;
          ++truncations;
          ASSERT_EQ(l, r) << "cut " << cut << " of " << size;
          if (r) ASSERT_EQ(got, want);
        }
        // Random byte changes.
        for (int m = 0; m < 8; ++m) {
          std::vector<std::uint8_t> bad(slot.begin(), slot.begin() + size);
          bad[rng() % size] = static_cast<std::uint8_t>(rng());
          if (!encoded::LaneDecoder::takes(bad.data(), size)) continue;
          ++mutations;
          const bool r = reference_values(bad.data(), size, n, want);
          const bool l = lane_values(bad.data(), size, n, got);
          ASSERT_EQ(l, r) << "mutation " << m;
          if (r) ASSERT_EQ(got, want);
        }
      }
  std::printf("lane decoder: %zu streams (%zu rANS, %zu raw, %zu constant), %zu escapes (%zu of several bytes), "
              "%zu truncations, %zu mutations\n",
              taken, rans, raw, constant, escaped, long_escapes, truncations, mutations);
  EXPECT_GT(rans, 60u);
  EXPECT_GT(raw, 10u);
  EXPECT_GT(constant, 5u);
  EXPECT_GT(escaped, 100u);
  EXPECT_GT(long_escapes, 10u);
  EXPECT_GT(truncations, 500u);
  EXPECT_GT(mutations, 500u);
  // A lane without a stream decodes zeros through rans_next (as_constant(0)), consuming nothing.
  {
    std::vector<std::uint32_t> tables(encoded::LaneDecoder::kWords * 32, 0xdeadbeefu);
    encoded::LaneDecoder dec;
    dec.place(tables.data(), 3);
    const std::uint8_t one = 0xff;
    dec.as_constant(0, &one);
    bool bad = false;
    for (int i = 0; i < 1000; ++i) ASSERT_EQ(dec.rans_next(bad), 0u);
    EXPECT_FALSE(bad);
    EXPECT_EQ(dec.at, 0u);
  }
  // A stream the decoder does not take (sparse, rANS alphabets above 30) is left to the scattered path.
  std::vector<std::uint32_t> wide(4096);
  for (std::uint32_t i = 0; i < wide.size(); ++i) wide[i] = (i * 2654435761u) % 100;  // 100 values: K = 128
  slot.assign(encoded::stream_slot_bytes(4096), 0);
  std::uint64_t sum = 0;
  const std::uint32_t size = encoded::encode_stream([&](std::uint32_t i) { return wide[i]; }, 4096, slot.data(), &sum);
  ASSERT_EQ(slot[0], encoded::kRans);
  EXPECT_FALSE(encoded::LaneDecoder::takes(slot.data(), size));
  EXPECT_FALSE(encoded::LaneDecoder::takes(slot.data(), 0));
}
