// encoded-v1 on the GPU: the CUDA encoder writes the same bytes as the CPU reference, and every query on the
// GPU-resident encoded form equals the CPU reference and the dense data.
#include <gtest/gtest.h>

#include "device/cuda/cuda_check.hpp"
#include "device/cuda/device_buffer.hpp"
#include "encoded_fixtures.hpp"
#include "io/sample/sample.hpp"
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
  EXPECT_EQ(gpu.resident_bytes() - gpu.tiles().size() * sizeof(encoded::TileRef), cpu.resident_bytes());
}

TEST(EncodedCuda, ManyTilesEncodedInSeveralScratchGroups) {
  QGPU_REQUIRE_CUDA();
  // 256 x 256 pixels x 512 positions need 135 MB of encode slots per tile: one tile per 256 MiB scratch group.
  const Dense d = test::mixed({5, 311, 256, 256}, DType::u8, 11);  // 1555 frames: 4 tiles
  expect_same(encode_gpu(d, encoded::kDefaultTile, 311), encode_cpu(d, encoded::kDefaultTile), d);
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
