// encoded-v1 on the GPU: the CUDA encoder writes the same bytes as the CPU reference, and every query on the
// GPU-resident encoded form equals the CPU reference and the dense data.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <random>

#include "device/cuda/cuda_check.hpp"
#include "device/cuda/device_buffer.hpp"
#include "encoded_fixtures.hpp"
#include "io/sample/sample.hpp"
#include "resident/encoded/cuda/encode_kernels.hpp"
#include "resident/encoded/cuda/encoded_cuda.hpp"
#include "resident/encoded/encoded_resident.hpp"
#include "support/cuda_required.hpp"

using namespace qgpu;
using test::Dense;

namespace {

// Uploads the dense data and appends it in batches of `batch` frames (the loader appends whole scan rows).
EncodedResident encode_gpu(const Dense& d, std::uint32_t tile, std::size_t batch) {
  DeviceBuffer dev(d.bytes.size());
  dev.upload(d.bytes.data(), d.bytes.size());
  EncodedResident r(d.shape, d.dtype, Backend::cuda, tile);
  const std::size_t fb = d.frame_pixels() * dtype_size(d.dtype), n = d.shape.frames();
  for (std::size_t f = 0; f < n; f += batch) r.append(dev.as<std::uint8_t>() + f * fb, std::min(batch, n - f));
  return r;
}

EncodedResident encode_cpu(const Dense& d, std::uint32_t tile) {
  EncodedResident r(d.shape, d.dtype, Backend::cpu, tile);
  r.append(d.bytes.data(), d.shape.frames());
  return r;
}

void expect_same(const EncodedResident& gpu, const EncodedResident& cpu, const Dense& d) {
  ASSERT_TRUE(gpu.complete());
  EXPECT_EQ(gpu.backend(), Backend::cuda);
  ASSERT_EQ(gpu.tiles().size(), cpu.tiles().size());
  {  // resident bytes: the payloads, every directory once, totals and sum pattern, plus at most a pad and a 16-byte
     // alignment per group, the device copy of the tile references, and a kept payload arena's unused bytes (at
     // most 1/4 of the payload)
    const std::size_t P = d.frame_pixels(), T = gpu.tiles().size();
    std::size_t exact = (T * (P + 1) + 2 * (d.shape.frames() + P)) * sizeof(std::uint32_t), payload = 0;
    for (std::size_t k = 0; k < T; ++k) payload += cpu.tile_bytes(k).payload.size();
    exact += payload;
    EXPECT_GE(gpu.resident_bytes(), exact);
    EXPECT_LE(gpu.resident_bytes(), exact + T * (encoded::kPayloadPad + 16 + sizeof(encoded::TileRef)) + payload / 4);
  }
  for (std::size_t k = 0; k < gpu.tiles().size(); ++k) {
    const auto g = gpu.tile_bytes(k), c = cpu.tile_bytes(k);
    EXPECT_EQ(g.len, c.len) << "tile " << k;
    EXPECT_EQ(g.dir, c.dir) << "tile " << k << ": directories differ";
    EXPECT_TRUE(g.payload == c.payload) << "tile " << k << ": stream bytes differ";
  }
  EXPECT_EQ(gpu.frame_totals(), test::ref_totals(d));
  EXPECT_EQ(gpu.sum_pattern(), test::ref_sum_pattern(d));
  std::vector<std::uint32_t> px, w;
  test::some_pixels(d.frame_pixels(), px, w);
  const auto ms = gpu.masked_sum(px, w);
  EXPECT_EQ(ms, cpu.masked_sum(px, w));
  EXPECT_EQ(ms, test::ref_masked_sum(d, px, w));
  EXPECT_TRUE(gpu.pixels(px) == test::ref_pixels(d, px)) << "GPU pixel gather differs";
  std::vector<std::uint32_t> all, rows, cols;
  for (std::uint32_t p = 0; p < d.frame_pixels(); ++p) {
    all.push_back(p);
    rows.push_back(p / static_cast<std::uint32_t>(d.shape.det_cols));
    cols.push_back(p % static_cast<std::uint32_t>(d.shape.det_cols));
  }
  const auto m = gpu.masked_sums(all, {rows, cols});
  EXPECT_EQ(m, cpu.masked_sums(all, {rows, cols}));
  EXPECT_EQ(m[0], test::ref_masked_sum(d, all, rows));
  EXPECT_EQ(gpu.masked_sums(all, {rows, cols, cols})[2], test::ref_masked_sum(d, all, cols));
  EXPECT_TRUE(gpu.read().bytes == d.bytes) << "GPU full decode differs from the dense data";
  const std::size_t n = d.shape.frames();
  for (std::size_t f : {std::size_t{0}, n / 3, n - 1}) EXPECT_EQ(gpu.frame(f), test::ref_frame(d, f)) << "frame " << f;
  const Shape4D& s = d.shape;
  const Region sr{s.scan_rows / 3, s.scan_cols / 4, s.scan_rows - s.scan_rows / 3, s.scan_cols / 2 + 1};
  const Region kr{1, s.det_cols / 2, s.det_rows - 1, s.det_cols - s.det_cols / 2};
  EXPECT_TRUE(gpu.read(sr, kr).bytes == test::ref_region(d, sr, kr)) << "GPU region read differs";
  EXPECT_TRUE(gpu.read(sr, kr).bytes == cpu.read(sr, kr).bytes);
}

}  // namespace

TEST(EncodedCuda, SameBytesAndQueriesAsCpuOnEveryDtype) {
  QGPU_REQUIRE_CUDA();
  for (DType t : {DType::u8, DType::u16, DType::u32}) {
    SCOPED_TRACE(dtype_name(t));
    const Dense d = test::mixed({7, 9, 7, 5}, t);  // 63 frames; tiles of 16: 16, 16, 16, 15
    expect_same(encode_gpu(d, 16, 9), encode_cpu(d, 16), d);
  }
}

TEST(EncodedCuda, DefaultTileBatchesOfScanRowsAcrossTileBoundaries) {
  QGPU_REQUIRE_CUDA();
  const Dense d = test::mixed({37, 29, 13, 11}, DType::u16, 8);  // 1073 frames: 512, 512, 49
  for (std::size_t batch : {std::size_t{29}, std::size_t{1}, std::size_t{1073}}) {
    SCOPED_TRACE(batch);
    expect_same(encode_gpu(d, encoded::kDefaultTile, batch), encode_cpu(d, encoded::kDefaultTile), d);
  }
}

TEST(EncodedCuda, SimulatedSample) {
  QGPU_REQUIRE_CUDA();
  sample::SampleSpec s;
  s.scan_rows = s.scan_cols = 24;
  s.det_rows = s.det_cols = 64;
  Dense d{{24, 24, 64, 64}, DType::u16, std::vector<std::uint8_t>(24 * 24 * 64 * 64 * 2)};
  sample::simulate_frames(s, 0, 576, d.bytes.data());
  const EncodedResident gpu = encode_gpu(d, encoded::kDefaultTile, 24);
  const EncodedResident cpu = encode_cpu(d, encoded::kDefaultTile);
  expect_same(gpu, cpu, d);
  // The same bytes as the CPU resident, plus the device refs and kPayloadPad bytes per payload allocation (one per
  // group of tiles: 1 or 2 here), plus the 16-byte alignment (0..15 bytes) of each group placed in the payload
  // arena; the arena (64 KiB for 64 frames) is trimmed to its used bytes and a pad.
  const std::size_t extra = gpu.resident_bytes() - gpu.tiles().size() * sizeof(encoded::TileRef) - cpu.resident_bytes();
  EXPECT_GE(extra, encoded::kPayloadPad);
  EXPECT_LE(extra, gpu.tiles().size() * (encoded::kPayloadPad + 15) + encoded::kPayloadPad) << extra;
}

// The payload arena made after the first encoded batch (sized from it): the same bytes, queries and resident-bytes
// bounds as the CPU resident when the later frames are like the first (the arena holds them), far busier (groups
// that do not fit get their own allocations) or empty (the arena, far too large, is trimmed to the exact bytes).
TEST(EncodedCuda, PayloadArenaSizedFromTheFirstBatch) {
  QGPU_REQUIRE_CUDA();
  const Shape4D shape{12, 20, 16, 16};  // 240 frames in appends of 40, tiles of 32
  const Dense busy = test::mixed(shape, DType::u16, 9);
  for (int kind = 0; kind < 3; ++kind) {
    SCOPED_TRACE("kind " + std::to_string(kind));
    Dense d = busy;
    for (std::size_t f = 0; f < shape.frames(); ++f)
      for (std::size_t p = 0; p < d.frame_pixels(); ++p)
        if ((kind == 1 && f < 40 && p % 16) || (kind == 2 && f >= 40)) d.set(f, p, 0);
    const EncodedResident gpu = encode_gpu(d, 32, 40), cpu = encode_cpu(d, 32);
    expect_same(gpu, cpu, d);
  }
}

TEST(EncodedCuda, ManyTilesEncodedInSeveralScratchGroups) {
  QGPU_REQUIRE_CUDA();
  // 256 x 256 pixels x 512 positions: 135 MB of worst-case stream bounds per tile, appended in batches of 311
  // frames (tiles split across appends); the compact encoder reserves about the encoded bytes.
  const Dense d = test::mixed({5, 311, 256, 256}, DType::u8, 11);  // 1555 frames: 4 tiles
  const EncodedResident gpu = encode_gpu(d, encoded::kDefaultTile, 311);
  expect_same(gpu, encode_cpu(d, encoded::kDefaultTile), d);
  EXPECT_NE(gpu.encoder_stages().find("stats+encode"), std::string::npos) << gpu.encoder_stages();
}

TEST(EncodedCuda, CopiesBetweenHostAndGpuKeepTheBytes) {
  QGPU_REQUIRE_CUDA();
  const Dense d = test::mixed({9, 13, 6, 9}, DType::u32, 2);  // 117 frames, tiles of 32
  const EncodedResident gpu = encode_gpu(d, 32, 13), cpu = encode_cpu(d, 32);
  const EncodedResident back = gpu.to_host();
  EXPECT_EQ(back.backend(), Backend::cpu);
  const EncodedResident up = cpu.to_device();
  EXPECT_EQ(up.backend(), Backend::cuda);
  expect_same(up, cpu, d);
  expect_same(gpu, back, d);
  EXPECT_EQ(back.frame_totals(), cpu.frame_totals());
  EXPECT_EQ(back.sum_pattern(), cpu.sum_pattern());
  EXPECT_TRUE(back.read().bytes == d.bytes);
}

TEST(EncodedCuda, MaskedSumOfNoPixelsIsZero) {
  QGPU_REQUIRE_CUDA();
  const Dense d = test::mixed({3, 5, 4, 4}, DType::u16);
  const EncodedResident gpu = encode_gpu(d, 8, 5);
  EXPECT_EQ(gpu.masked_sum({}, {}), std::vector<std::uint64_t>(15, 0));
  EXPECT_THROW(gpu.masked_sum({16}, {1}), RegionError);
  EXPECT_THROW(gpu.frame(15), RegionError);
}

// complement_sum: weight x (frame total - sum over the listed pixels), modulo 2^64, equal to the CPU reference and
// to the masked sum over the other pixels; an empty list gives weight x the totals; a pixel outside raises.
TEST(EncodedCuda, ComplementSumEqualsCpuAndTheMaskOverTheOtherPixels) {
  QGPU_REQUIRE_CUDA();
  const Dense d = test::mixed({5, 130, 12, 10}, DType::u32, 3);  // 650 frames: a partial last tile of 512
  const EncodedResident gpu = encode_gpu(d, 512, 97), cpu = encode_cpu(d, 512);
  std::vector<std::uint32_t> rest, own;
  for (std::uint32_t p = 0; p < d.frame_pixels(); ++p) (p % 3 == 1 ? rest : own).push_back(p);
  for (const std::uint32_t w : {1u, 7u, 0xffffffffu}) {
    const std::vector<std::uint64_t> got = gpu.complement_sum(rest, w);
    EXPECT_EQ(got, cpu.complement_sum(rest, w)) << "weight " << w;
    EXPECT_EQ(got, test::ref_masked_sum(d, own, std::vector<std::uint32_t>(own.size(), w))) << "weight " << w;
  }
  std::vector<std::uint64_t> twice = test::ref_totals(d);
  for (auto& t : twice) t *= 2;
  EXPECT_EQ(gpu.complement_sum({}, 2), twice);
  EXPECT_THROW(gpu.complement_sum({120}, 1), RegionError);
}

// uniform_sum of a cost split on the GPU: the mask's sums whichever side the split decodes (its own streams with the
// resident's device weights of 1, or the totals minus the others'), equal to the reference for weights that wrap.
TEST(EncodedCuda, UniformSumOfACostSplitEqualsTheMaskOnEitherSide) {
  QGPU_REQUIRE_CUDA();
  const Dense d = test::mixed({5, 130, 12, 10}, DType::u32, 3);
  const EncodedResident gpu = encode_gpu(d, 512, 97);
  int sides[2] = {0, 0};
  for (const std::uint32_t every : {1u, 2u, 9u, 40u}) {
    std::vector<std::uint32_t> listed;
    for (std::uint32_t p = 0; p < d.frame_pixels(); p += every) listed.push_back(p);
    const EncodedResident::PixelSplit split = gpu.split_by_cost(listed, true);
    ++sides[split.rest_cheaper()];
    for (const std::uint32_t w : {1u, 5u, 0xffffffffu})
      EXPECT_EQ(gpu.uniform_sum(split, w), test::ref_masked_sum(d, listed, std::vector<std::uint32_t>(listed.size(), w)))
          << "every " << every << " weight " << w << (split.rest_cheaper() ? " (the others decoded)" : "");
  }
  EXPECT_GT(sides[0], 0);
  EXPECT_GT(sides[1], 0);
}

// The masked-sum kernel: pixel lists longer than a block (several groups of 32 per warp, several blocks per
// tile), repeated pixels, zero and maximal weights (products and sums wrap modulo 2^64 as on the CPU), tiles
// shorter than, not a multiple of, and far longer than the 32-position lockstep chunk (4096: the largest shared
// sums), and every stream model incl. rANS alphabets beyond the shared tables (the scattered path).
TEST(EncodedCuda, MaskedSumsEqualCpuAcrossBlocksWeightsAndTiles) {
  QGPU_REQUIRE_CUDA();
  const Dense d = test::mixed({3, 700, 24, 24}, DType::u32, 5);  // 2100 frames, 576 pixels
  std::vector<std::uint32_t> px;
  std::vector<std::vector<std::uint32_t>> w(3);
  std::mt19937 rng(9);
  for (int rep = 0; rep < 3; ++rep)
    for (std::uint32_t p = 0; p < d.frame_pixels(); ++p) {
      px.push_back(rep == 1 ? static_cast<std::uint32_t>(d.frame_pixels()) - 1 - p : p);
      w[0].push_back(rng() % 5 == 0 ? 0u : 1u);
      w[1].push_back(rng() % 7 == 0 ? 0xffffffffu : static_cast<std::uint32_t>(rng() % 200));
      w[2].push_back(static_cast<std::uint32_t>(rng()));
    }
  for (std::uint32_t tile : {5u, 33u, 512u, 4096u}) {
    SCOPED_TRACE("tile " + std::to_string(tile));
    const EncodedResident gpu = encode_gpu(d, tile, 700), cpu = encode_cpu(d, tile);
    const auto g = gpu.masked_sums(px, w);
    ASSERT_EQ(g, cpu.masked_sums(px, w));
    for (int k = 0; k < 3; ++k) EXPECT_EQ(g[k], test::ref_masked_sum(d, px, w[k])) << "weighting " << k;
    EXPECT_EQ(gpu.masked_sums(px, {w[1], w[2]}), cpu.masked_sums(px, {w[1], w[2]}));
    EXPECT_EQ(gpu.masked_sum({7, 8, 300}, {1, 2, 3}), cpu.masked_sum({7, 8, 300}, {1, 2, 3}));
  }
}

// A corrupted stream on the GPU raises FormatError from the masked sums (in the scattered and the lockstep path).
TEST(EncodedCuda, MalformedStreamInMaskedSumRaises) {
  QGPU_REQUIRE_CUDA();
  const Dense d = test::mixed({2, 8, 3, 3}, DType::u16);
  const EncodedResident cpu = encode_cpu(d, 16);
  // Unknown model bytes (the scattered path), then raw streams with a bit width over 32 (the lockstep path).
  for (int bad_model : {0x7f, 0, -1}) {
    encoded::cpu::HostTile bad = cpu.tile_bytes(0);
    int corrupted = 0;
    for (std::size_t p = 0; p < 9; ++p) {
      std::uint8_t* s = bad.payload.data() + bad.dir[p];
      if (bad.dir[p + 1] == bad.dir[p]) continue;
      if (bad_model >= 0) {
        s[0] = static_cast<std::uint8_t>(bad_model);
        ++corrupted;
      } else if (s[0] == encoded::kRaw) {
        encoded::ByteReader rd{s + 1, bad.payload.data() + bad.dir[p + 1]};
        rd.varint();  // base; the width byte follows
        ASSERT_TRUE(rd.ok && rd.p < rd.end);
        bad.payload[rd.p - bad.payload.data()] = 40;
        ++corrupted;
      }
    }
    ASSERT_GT(corrupted, 0) << bad_model;
    DeviceBuffer payload(bad.payload.size()), dir(bad.dir.size() * 4), px(9 * 4), w(9 * 4), out(16 * 8),
        refs(sizeof(encoded::TileRef));
    payload.upload(bad.payload.data(), payload.bytes());
    dir.upload(bad.dir.data(), dir.bytes());
    const encoded::TileRef ref{payload.as<std::uint8_t>(), dir.as<std::uint32_t>(), bad.len, 0};
    refs.upload(&ref, sizeof(ref));
    std::vector<std::uint32_t> all(9), ones(9, 1);
    for (std::uint32_t p = 0; p < 9; ++p) all[p] = p;
    px.upload(all.data(), px.bytes());
    w.upload(ones.data(), w.bytes());
    EXPECT_THROW(encoded::cuda::masked_sum(cpu.layout(), refs.as<encoded::TileRef>(), px.as<std::uint32_t>(),
                                           w.as<std::uint32_t>(), 9, out.as<std::uint64_t>()),
                 FormatError)
        << int(bad_model);
  }
}

namespace {

// Low counts as in a BF disk (Poisson mean 2.5 inside radius det/3, 0.05 outside): nearly every stream inside is
// rANS with a small alphabet, so whole warps decode rANS in lockstep (the fast kernel's full-warp sum).
Dense low_counts(const Shape4D& shape, DType dtype, std::uint64_t seed) {
  Dense d{shape, dtype, std::vector<std::uint8_t>(shape.elements() * dtype_size(dtype))};
  std::mt19937_64 rng(seed);
  std::poisson_distribution<std::uint32_t> bright(2.5), dark(0.05);
  const double cr = (shape.det_rows - 1) / 2.0, cc = (shape.det_cols - 1) / 2.0, r = shape.det_rows / 3.0;
  for (std::size_t f = 0; f < shape.frames(); ++f)
    for (std::size_t p = 0; p < d.frame_pixels(); ++p) {
      const double dr = double(p / shape.det_cols) - cr, dc = double(p % shape.det_cols) - cc;
      d.set(f, p, dr * dr + dc * dc < r * r ? bright(rng) : dark(rng));
    }
  return d;
}

// encoded::cuda::masked_sums, results to the host ([k][frame]).
std::vector<std::vector<std::uint64_t>> gpu_sums(const EncodedResident& r, const std::vector<std::uint32_t>& px,
                                                 const std::vector<std::vector<std::uint32_t>>& w) {
  const std::size_t K = w.size(), n = px.size(), frames = r.layout().frames;
  DeviceBuffer d_px(std::max<std::size_t>(n, 1) * 4), d_w(std::max<std::size_t>(K * n, 1) * 4), out(K * frames * 8);
  if (n) {
    d_px.upload(px.data(), n * 4);
    for (std::size_t k = 0; k < K; ++k) d_w.upload(w[k].data(), n * 4, k * n * 4);
  }
  encoded::cuda::masked_sums(r.layout(), r.device_tiles(), d_px.as<std::uint32_t>(), d_w.as<std::uint32_t>(), n,
                             static_cast<int>(K), out.as<std::uint64_t>(), nullptr);
  std::vector<std::vector<std::uint64_t>> got(K, std::vector<std::uint64_t>(frames));
  for (std::size_t k = 0; k < K; ++k) out.download(got[k].data(), frames * 8, k * frames * 8);
  return got;
}

}  // namespace

// The CUDA encoder called directly: encode_compact writes the CPU reference's bytes and sums for every dtype, odd
// detector sizes (not multiples of a warp or block), frame counts not a multiple of the tile, tile lengths 1..4096,
// all-zero, saturated and mixed data; and encode_compact with a scratch too small for a group encodes it again in
// smaller groups, adding the sums once.
namespace {

struct GpuEncoded {
  std::vector<encoded::cpu::HostTile> tiles;
  std::vector<std::uint64_t> sums, totals;
  encoded::cuda::EncodeTiming timing;
};

// live: LiveGroups bits for the call (tile `tile`), uploaded; empty: none.
GpuEncoded encode_direct(const Dense& d, std::uint32_t tile, std::size_t max_scratch = 0,
                         encoded::cuda::CompactScratch* kept = nullptr, const std::vector<std::uint32_t>& live = {}) {
  const encoded::Layout l{d.shape.frames(), d.frame_pixels(), d.dtype, tile};
  DeviceBuffer dev(d.bytes.size()), sums(l.frame_pixels * 8), totals(l.frames * 8), d_live(live.size() * 4);
  dev.upload(d.bytes.data(), d.bytes.size());
  if (!live.empty()) d_live.upload(live.data(), d_live.bytes());
  QGPU_CUDA(cudaMemset(sums.data(), 0, sums.bytes()));
  QGPU_CUDA(cudaMemset(totals.data(), 0xff, totals.bytes()));  // every total must be written
  encoded::cuda::CompactScratch local;
  encoded::cuda::CompactScratch& cs = kept ? *kept : local;
  cs.max_bytes = max_scratch;
  GpuEncoded out;
  const auto groups = encoded::cuda::encode_compact(l, dev.data(), l.frames, sums.as<std::uint64_t>(),
                                                    totals.as<std::uint64_t>(), nullptr, &cs, &out.timing, nullptr, 0,
                                                    live.empty() ? nullptr : d_live.as<std::uint32_t>());
  for (const auto& g : groups)
    for (const auto& r : g.refs) {
      encoded::cpu::HostTile t;
      t.len = r.len;
      t.dir.resize(l.frame_pixels + 1);
      QGPU_CUDA(cudaMemcpy(t.dir.data(), r.dir, t.dir.size() * 4, cudaMemcpyDeviceToHost));
      t.payload.resize(t.dir.back());
      if (!t.payload.empty())
        QGPU_CUDA(cudaMemcpy(t.payload.data(), r.payload, t.payload.size(), cudaMemcpyDeviceToHost));
      out.tiles.push_back(std::move(t));
    }
  out.sums.resize(l.frame_pixels);
  sums.download(out.sums.data(), sums.bytes());
  out.totals.resize(l.frames);
  totals.download(out.totals.data(), totals.bytes());
  return out;
}

void expect_cpu_bytes(const GpuEncoded& g, const Dense& d, std::uint32_t tile) {
  const encoded::Layout l{d.shape.frames(), d.frame_pixels(), d.dtype, tile};
  ASSERT_EQ(g.tiles.size(), l.tiles());
  const std::size_t fb = l.frame_pixels * dtype_size(d.dtype);
  for (std::size_t k = 0; k < l.tiles(); ++k) {
    const auto c = encoded::cpu::encode_tile(l, d.bytes.data() + k * tile * fb, l.tile_len(k));
    EXPECT_EQ(g.tiles[k].len, c.len) << "tile " << k;
    EXPECT_EQ(g.tiles[k].dir, c.dir) << "tile " << k << ": directories differ";
    EXPECT_TRUE(g.tiles[k].payload == c.payload) << "tile " << k << ": stream bytes differ";
  }
  EXPECT_EQ(g.sums, test::ref_sum_pattern(d));
  EXPECT_EQ(g.totals, test::ref_totals(d));
}

Dense filled_gpu(const Shape4D& s, DType t, std::uint32_t v) {
  Dense d{s, t, std::vector<std::uint8_t>(s.elements() * dtype_size(t))};
  for (std::size_t f = 0; f < s.frames(); ++f)
    for (std::size_t p = 0; p < d.frame_pixels(); ++p) d.set(f, p, v);
  return d;
}

}  // namespace

// The masked-sum kernel gives the CPU reference's exact uint64 sums on every count dtype, for low-count (all-rANS)
// and mixed (every model, large alphabets, escapes) data, tiles shorter than and not a multiple of the 32-position
// chunk, and masks: a disk with weight 1 (BF), every pixel with row and column weights (CoM), three weightings with
// zero and maximal weights, a reversed list with repeats, one pixel, and no pixels.
TEST(EncodedCuda, MaskedSumKernelEqualsCpu) {
  QGPU_REQUIRE_CUDA();
  const Shape4D shape{4, 300, 20, 20};  // 1200 frames, 400 pixels
  for (DType t : {DType::u8, DType::u16, DType::u32})
    for (int kind = 0; kind < 2; ++kind) {
      const Dense d = kind == 0 ? low_counts(shape, t, 7) : test::mixed(shape, t, 11);
      std::vector<std::uint32_t> disk, ones, all, rows, cols, rnd, big, rev;
      std::mt19937 rng(3);
      for (std::uint32_t p = 0; p < d.frame_pixels(); ++p) {
        const double dr = double(p / 20) - 9.5, dc = double(p % 20) - 9.5;
        if (dr * dr + dc * dc < 36) disk.push_back(p);
        all.push_back(p);
        rows.push_back(p / 20);
        cols.push_back(p % 20);
        rnd.push_back(static_cast<std::uint32_t>(rng()));
        big.push_back(rng() % 3 == 0 ? 0u : 0xffffffffu);
      }
      ones.assign(disk.size(), 1);
      for (std::uint32_t p = 0; p < d.frame_pixels(); ++p) rev.push_back(static_cast<std::uint32_t>(d.frame_pixels()) - 1 - p / 2);
      const std::vector<std::uint32_t> rev_w(rev.size(), 3);
      const std::vector<std::pair<std::vector<std::uint32_t>, std::vector<std::vector<std::uint32_t>>>> queries = {
          {disk, {ones}}, {all, {rows, cols}}, {all, {all, rnd, big}}, {rev, {rev_w}}, {{137}, {{5}}}, {{}, {{}}}};
      for (std::uint32_t tile : {7u, 33u, 512u}) {
        SCOPED_TRACE(dtype_name(t) + (kind == 0 ? " low counts" : " mixed") + ", tile " + std::to_string(tile));
        const EncodedResident gpu = encode_gpu(d, tile, 300), cpu = encode_cpu(d, tile);
        for (std::size_t q = 0; q < queries.size(); ++q) {
          const auto& [px, w] = queries[q];
          const auto want = cpu.masked_sums(px, w);
          for (std::size_t k = 0; k < w.size(); ++k) ASSERT_EQ(want[k], test::ref_masked_sum(d, px, w[k]));
          EXPECT_EQ(gpu_sums(gpu, px, w), want) << "query " << q;
        }
        EXPECT_EQ(gpu.masked_sums(all, {rows, cols}), cpu.masked_sums(all, {rows, cols}));  // through the resident
      }
    }
}

// A rANS stream with a bad header (alphabet 0, or a frequency table that does not sum to 4096) raises FormatError
// from the masked sums.
TEST(EncodedCuda, MalformedRansStreamRaisesInTheMaskedSums) {
  QGPU_REQUIRE_CUDA();
  const Dense d = low_counts({2, 64, 4, 4}, DType::u16, 5);
  // The compact policy keeps rANS wherever it is smallest (the fast policy, the default, may store these low-count
  // streams otherwise and leave nothing to corrupt: the H200 run of 2026-12-05).
  EncodedResident cpu(d.shape, d.dtype, Backend::cpu, 128, encoded::Policy::compact);
  cpu.append(d.bytes.data(), d.shape.frames());
  for (int how = 0; how < 2; ++how) {
    encoded::cpu::HostTile bad = cpu.tile_bytes(0);
    int corrupted = 0;
    for (std::size_t p = 0; p < 16; ++p) {
      std::uint8_t* s = bad.payload.data() + bad.dir[p];
      if (bad.dir[p + 1] == bad.dir[p] || s[0] != encoded::kRans) continue;
      encoded::ByteReader rd{s + 1, bad.payload.data() + bad.dir[p + 1]};
      rd.varint();  // base; K and the first frequency follow
      std::uint8_t* k_byte = bad.payload.data() + (rd.p - bad.payload.data());
      if (how == 0) {
        *k_byte = 0;
      } else {
        k_byte[1] = static_cast<std::uint8_t>(k_byte[1] ^ 1u);  // the first frequency +-1: the sum is not 4096
      }
      ++corrupted;
    }
    ASSERT_GT(corrupted, 0);
    DeviceBuffer payload(bad.payload.size()), dir(bad.dir.size() * 4), px(16 * 4), w(16 * 4), out(128 * 8),
        refs(sizeof(encoded::TileRef));
    payload.upload(bad.payload.data(), payload.bytes());
    dir.upload(bad.dir.data(), dir.bytes());
    const encoded::TileRef ref{payload.as<std::uint8_t>(), dir.as<std::uint32_t>(), bad.len, 0};
    refs.upload(&ref, sizeof(ref));
    std::vector<std::uint32_t> all(16), ones(16, 1);
    for (std::uint32_t p = 0; p < 16; ++p) all[p] = p;
    px.upload(all.data(), px.bytes());
    w.upload(ones.data(), w.bytes());
    EXPECT_THROW(encoded::cuda::masked_sum(cpu.layout(), refs.as<encoded::TileRef>(), px.as<std::uint32_t>(),
                                           w.as<std::uint32_t>(), 16, out.as<std::uint64_t>(), nullptr),
                 FormatError)
        << "corruption " << how;
  }
}

TEST(EncodedCuda, CompactEncoderWritesTheCpuBytes) {
  QGPU_REQUIRE_CUDA();
  struct Case {
    Shape4D shape;
    std::uint32_t tile;
  };
  // Frame totals summed in the statistics pass (uint8/16, >= 256 pixels, tiles <= 1024; blocks of 256 streams
  // across two tiles when the pixel count is not a multiple of 256: 17 x 19, 23 x 29) and by frame_totals (the
  // others).
  const Case cases[] = {{{7, 9, 7, 5}, 16},       {{3, 7, 1, 1}, 1},      {{5, 13, 17, 19}, 33},
                        {{37, 29, 13, 11}, 512},  {{3, 700, 9, 7}, 4096}, {{2, 300, 16, 16}, 5},
                        {{3, 100, 23, 29}, 64},   {{2, 50, 16, 32}, 1024}};
  for (DType t : {DType::u8, DType::u16, DType::u32})
    for (const Case& c : cases)
      for (int kind = 0; kind < 3; ++kind) {
        SCOPED_TRACE(dtype_name(t) + " tile " + std::to_string(c.tile) + " kind " + std::to_string(kind) +
                     " detector " + std::to_string(c.shape.det_rows) + "x" + std::to_string(c.shape.det_cols));
        const Dense d = kind == 0   ? test::mixed(c.shape, t, 3 + c.tile)
                        : kind == 1 ? filled_gpu(c.shape, t, 0)
                                    : filled_gpu(c.shape, t, test::max_count(t));
        const GpuEncoded g = encode_direct(d, c.tile);
        expect_cpu_bytes(g, d, c.tile);
        EXPECT_EQ(g.timing.calls, 1u);
        EXPECT_EQ(g.timing.retries, 0u);
        if (kind == 1) EXPECT_EQ(g.timing.payload_bytes, 0u);  // all zero: empty streams only
      }
}

static std::vector<std::uint32_t> first_n_identity(std::uint32_t n) {
  std::vector<std::uint32_t> v(n);
  for (std::uint32_t i = 0; i < n; ++i) v[i] = i;
  return v;
}

// A pixel count that is a multiple of the encoder's block (32 x 32 = 1024): after the first call the kept scratch
// holds the tile's groups of 32 pixels by decreasing total count, and the next calls take them in that order; the
// bytes, sums and totals stay those of the CPU reference, as do a resident's queries when it is appended in batches.
TEST(EncodedCuda, CompactEncoderInGroupDensityOrderWritesTheCpuBytes) {
  QGPU_REQUIRE_CUDA();
  for (DType t : {DType::u8, DType::u16, DType::u32}) {
    SCOPED_TRACE(dtype_name(t));
    const Dense d = test::mixed({3, 200, 32, 32}, t, 11);  // 600 frames: tiles of 64 (the last of 24)
    encoded::cuda::CompactScratch kept;
    const GpuEncoded first = encode_direct(d, 64, 0, &kept);
    expect_cpu_bytes(first, d, 64);
    // The order expected from the reference sum pattern: group totals, decreasing, ties in group order.
    const std::vector<std::uint64_t> pattern = test::ref_sum_pattern(d);
    std::vector<std::uint64_t> group(32, 0);
    for (std::size_t p = 0; p < pattern.size(); ++p) group[p / 32] += pattern[p];
    std::vector<std::uint32_t> want(32);
    for (std::uint32_t g = 0; g < 32; ++g) want[g] = g;
    std::stable_sort(want.begin(), want.end(), [&](std::uint32_t a, std::uint32_t b) { return group[a] > group[b]; });
    ASSERT_NE(want, first_n_identity(32));  // the data makes the order differ from the pixel order
    ASSERT_TRUE(kept.group_order);
    std::vector<std::uint32_t> order(32);
    ASSERT_EQ(kept.group_order->bytes(), order.size() * 4);
    kept.group_order->buffer().download(order.data(), order.size() * 4);
    EXPECT_EQ(order, want);
    const GpuEncoded again = encode_direct(d, 64, 0, &kept);  // in that order
    expect_cpu_bytes(again, d, 64);
    const GpuEncoded tile512 = encode_direct(d, 512, 0, &kept);  // fused frame totals (u8/u16), two tiles
    expect_cpu_bytes(tile512, d, 512);
    expect_same(encode_gpu(d, 512, 97), encode_cpu(d, 512), d);  // a resident appended in batches of 97 frames
  }
}

TEST(EncodedCuda, CompactEncoderRetriesInSmallerGroupsWhenItsScratchIsShort) {
  QGPU_REQUIRE_CUDA();
  // Full-range u32 values in every other pixel: every such stream is raw (about 2050 bytes for 512 values); a
  // scratch of one tile's worst case (64 x 2055 bytes) holds one of the seven tiles, so the group of all seven is
  // encoded again in smaller groups (sized from what the first attempt needed, halved while one does not fit),
  // and the sums are added once.
  Dense d = test::mixed({7, 512, 8, 8}, DType::u32, 21);  // 3584 frames: 7 tiles of 512
  std::mt19937 rng(5);
  for (std::size_t f = 0; f < d.shape.frames(); ++f)
    for (std::size_t p = 0; p < d.frame_pixels(); p += 2) d.set(f, p, static_cast<std::uint32_t>(rng()));
  encoded::cuda::CompactScratch kept;
  const GpuEncoded g = encode_direct(d, 512, 1, &kept);
  expect_cpu_bytes(g, d, 512);
  EXPECT_GT(g.timing.retries, 0u);
  EXPECT_GT(g.timing.groups, 2u);
  EXPECT_LE(g.timing.reserved_bytes, 7 * 64 * encoded::cuda::stream_bound_bytes(512, 4));
  EXPECT_GT(kept.tile_bytes_hint, 0u);
  // A second call with the kept scratch sizes its groups from the first: no failed attempt, the same bytes.
  const GpuEncoded again = encode_direct(d, 512, 1, &kept);
  expect_cpu_bytes(again, d, 512);
  EXPECT_EQ(again.timing.retries, 0u);
  EXPECT_GT(again.timing.groups, 2u);
  // The same data with the default scratch: one group.
  const GpuEncoded one = encode_direct(d, 512);
  expect_cpu_bytes(one, d, 512);
  EXPECT_EQ(one.timing.groups, 1u);
  EXPECT_EQ(one.timing.retries, 0u);
}


// LiveGroups marks: the encoder reads only the marked groups of 32 pixels of each tile (and in them the marked chunks
// of 16 frames) and writes the CPU reference's bytes, sums and totals when every nonzero chunk of a group is marked:
// exact marks (live groups with zero chunks, tiles with no live group, with
// one, with a count of live groups that is not a multiple of the encoder block's 8 warps), every bit set (also past
// the last group of a word), with the density order of a kept scratch, with a scratch too short for a group, on
// every dtype (fused frame totals for u8/u16, frame_totals for u32). No marks at all: every stream is empty
// (the marks are what the encoder reads). Frames of no whole groups are refused.
namespace {

std::vector<std::uint32_t> exact_marks(const Dense& d, std::uint32_t tile) {
  const std::size_t P = d.frame_pixels(), wpt = encoded::LiveGroups::words_for(P, tile);
  std::vector<std::uint32_t> bits(encoded::LiveGroups::words_for(P, d.shape.frames(), tile), 0);
  for (std::size_t f = 0; f < d.shape.frames(); ++f)
    for (std::size_t p = 0; p < P; ++p)
      if (d.at(f, p)) bits[encoded::LiveGroups::word_of(f, p / 32, tile, wpt)] |= encoded::LiveGroups::bit_of(f, tile);
  return bits;
}

// Mixed data with whole groups zeroed per tile: tile k keeps groups g with (g * 5 + k) % 11 < k % 4 (none for
// k % 4 == 0), and group 0 of tile 1 only in its last frame; of the kept groups, chunk c of 16 frames of a tile is
// zero where (c + g) % 3 == 0 (the marks then skip chunks inside a live group).
Dense sparse_groups(const Shape4D& s, DType t, std::uint32_t tile, unsigned seed) {
  Dense d = test::mixed(s, t, seed);
  for (std::size_t f = 0; f < s.frames(); ++f) {
    const std::size_t k = f / tile, c = f % tile / 16;
    for (std::size_t p = 0; p < d.frame_pixels(); ++p) {
      const std::size_t g = p / 32;
      const bool last = k == 1 && g == 0 && (f + 1) % tile == 0;
      const bool keep = ((g * 5 + k) % 11 < k % 4 && (c + g) % 3 != 0) || last;
      if (!keep) d.set(f, p, 0);
    }
  }
  return d;
}

}  // namespace

TEST(EncodedCuda, CompactEncoderReadsOnlyMarkedGroups) {
  QGPU_REQUIRE_CUDA();
  struct Case {
    Shape4D shape;
    std::uint32_t tile;
  };
  // 16 x 64 = 1024 pixels (32 groups, 4 blocks of 8 warps), 24 x 40 = 960 (30 groups: not whole blocks, not a
  // multiple of the 256-stream block), 8 x 4 = 32 (one group); tiles of 64, 33 and 512 (fused totals u8/u16).
  const Case cases[] = {{{3, 200, 16, 64}, 64}, {{2, 99, 24, 40}, 33}, {{4, 300, 8, 4}, 512}};
  for (DType t : {DType::u8, DType::u16, DType::u32})
    for (const Case& c : cases) {
      SCOPED_TRACE(dtype_name(t) + " tile " + std::to_string(c.tile) + " detector " + std::to_string(c.shape.det_rows) +
                   "x" + std::to_string(c.shape.det_cols));
      const Dense d = sparse_groups(c.shape, t, c.tile, 5 + c.tile);
      const std::vector<std::uint32_t> marks = exact_marks(d, c.tile);
      std::size_t marked = 0;
      for (std::uint32_t w : marks) marked += static_cast<std::size_t>(__builtin_popcount(w));
      ASSERT_GT(marked, 0u);
      std::size_t chunks = 0;  // (group, chunk of 16 frames) pairs
      for (std::size_t t0 = 0; t0 < d.shape.frames(); t0 += c.tile)
        chunks += (std::min<std::size_t>(c.tile, d.shape.frames() - t0) + 15) / 16 * (d.frame_pixels() / 32);
      ASSERT_LT(marked, chunks);
      expect_cpu_bytes(encode_direct(d, c.tile, 0, nullptr, marks), d, c.tile);
      const std::vector<std::uint32_t> all(marks.size(), 0xffffffffu);
      expect_cpu_bytes(encode_direct(d, c.tile, 0, nullptr, all), d, c.tile);
      encoded::cuda::CompactScratch kept;  // the second call takes the groups in density order
      expect_cpu_bytes(encode_direct(d, c.tile, 0, &kept, marks), d, c.tile);
      expect_cpu_bytes(encode_direct(d, c.tile, 0, &kept, marks), d, c.tile);
      const GpuEncoded short_scratch = encode_direct(d, c.tile, 1, nullptr, marks);  // one tile per group
      expect_cpu_bytes(short_scratch, d, c.tile);
      const GpuEncoded none = encode_direct(d, c.tile, 0, nullptr, std::vector<std::uint32_t>(marks.size(), 0));
      EXPECT_EQ(none.timing.payload_bytes, 0u);
      for (const auto& tl : none.tiles) EXPECT_EQ(tl.dir.back(), 0u);
      std::uint64_t sum = 0;
      for (std::uint64_t v : none.sums) sum += v;
      EXPECT_EQ(sum, 0u);
    }
  const Dense odd = test::mixed({2, 10, 5, 7}, DType::u16, 3);  // 35 pixels
  EXPECT_THROW(encode_direct(odd, 8, 0, nullptr, {0xffffffffu, 0xffffffffu, 0xffffffffu}), InvalidArgument);
}
