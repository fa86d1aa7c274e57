// GPU load (direct chunk reads + CUDA bitshuffle/LZ4 decode) equals the CPU reference (HDF5 + plugin) exactly.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "bitshuffle_h5_files.hpp"
#include "corrupt.hpp"
#include "io/hdf5/cuda/encode_worker.hpp"
#include "io/hdf5/load.hpp"
#include "load_reference.hpp"
#include "support/cuda_required.hpp"
#include "support/temp_files.hpp"

using namespace qgpu;

namespace {

io::LoadOptions with(const std::string& backend) {
  io::LoadOptions o;
  o.backend = backend;
  return o;
}

void expect_same(const Dataset& gpu, const Dataset& cpu) {
  EXPECT_EQ(gpu.backend(), Backend::cuda);
  EXPECT_EQ(gpu.residency(), "gpu");
  ASSERT_EQ(gpu.shape(), cpu.shape());
  ASSERT_EQ(gpu.dtype(), cpu.dtype());
  const HostArray4D a = gpu.read(), b = cpu.read();
  EXPECT_TRUE(a.bytes == b.bytes) << "GPU decode differs from the HDF5 plugin decode";
}

}  // namespace

TEST(LoadCuda, EqualsPluginDecodeForEveryDtypeAndLayout) {
  QGPU_REQUIRE_CUDA();
  for (DType t : {DType::u8, DType::u16, DType::u32})
    for (bool four_d : {false, true}) {
      sample::SampleSpec s;
      s.scan_rows = 7;
      s.scan_cols = 9;
      s.det_rows = s.det_cols = 64;
      s.dtype = t;
      s.four_d = four_d;
      const std::string path = test::write_small_sample(dtype_name(t) + (four_d ? "4d" : "3d") + ".h5", s);
      SCOPED_TRACE(path);
      expect_same(io::load(path, with("cuda")), io::load(path, with("cpu")));
    }
}

TEST(LoadCuda, OddFrameSizesWithPartialBlocksAndTails) {
  QGPU_REQUIRE_CUDA();
  // 45 x 47 = 2115 elements: no full uint16 block (4096), a partial block of 2112, 3 verbatim tail elements.
  // 100 x 90 = 9000 elements in uint8: one full block of 8192, a partial block of 808, no tail.
  const std::pair<std::size_t, std::size_t> sizes[] = {{45, 47}, {100, 90}, {128, 128}};
  for (const auto& [r, c] : sizes)
    for (DType t : {DType::u8, DType::u16, DType::u32}) {
      sample::SampleSpec s;
      s.scan_rows = 3;
      s.scan_cols = 5;
      s.det_rows = r;
      s.det_cols = c;
      s.dtype = t;
      s.dose_per_frame = 50000;  // busy frames: many LZ4 literals
      const std::string path = test::write_small_sample(std::to_string(r) + dtype_name(t) + ".h5", s);
      SCOPED_TRACE(path);
      expect_same(io::load(path, with("cuda")), io::load(path, with("cpu")));
    }
}

TEST(LoadCuda, RegionsBinningAndBatches) {
  QGPU_REQUIRE_CUDA();
  sample::SampleSpec s;
  s.scan_rows = 12;
  s.scan_cols = 10;
  s.det_rows = s.det_cols = 48;
  const std::string path = test::write_small_sample("r.h5", s);
  const auto all = test::simulated<std::uint16_t>(s);
  io::LoadOptions o = with("cuda");
  o.batch_bytes = 4096;  // forces many batches of one output row
  expect_same(io::load(path, o), io::load(path, with("cpu")));
  o.scan_region = {2, 1, 8, 6};
  o.detector_region = {4, 8, 36, 32};
  const Dataset cropped = io::load(path, o);
  EXPECT_EQ(test::as_vector<std::uint16_t>(cropped.read()),
            (test::expected_load<std::uint16_t, std::uint16_t>(s, all, o.scan_region, o.detector_region, 1, 1)));
  o.bin_scan = 2;
  o.bin_detector = 4;
  const Dataset binned = io::load(path, o);
  EXPECT_EQ(binned.dtype(), DType::u32);
  EXPECT_EQ(binned.shape(), (Shape4D{4, 3, 9, 8}));
  EXPECT_EQ(test::as_vector<std::uint32_t>(binned.read()),
            (test::expected_load<std::uint16_t, std::uint32_t>(s, all, o.scan_region, o.detector_region, 2, 4)));
  io::LoadOptions oc = o;
  oc.backend = "cpu";
  expect_same(binned, io::load(path, oc));
}

// The dense resident allocated on a thread of its own while batch 0 is read and decoded (a direct load decodes batch
// 0 into the staging buffer and copies it over; a cropped/binned one waits before its binning): forced on at this
// size (QGPU_LOAD_ASYNC_ALLOC=1) and off, each equal to the CPU reference, with one batch and with many.
TEST(LoadCuda, ResidentAllocatedBesideTheFirstBatchLoadsTheSame) {
  QGPU_REQUIRE_CUDA();
  sample::SampleSpec s;
  s.scan_rows = 12;
  s.scan_cols = 10;
  s.det_rows = s.det_cols = 48;
  const std::string path = test::write_small_sample("async_alloc.h5", s);
  const auto all = test::simulated<std::uint16_t>(s);
  const Dataset ref = io::load(path, with("cpu"));
  for (const char* mode : {"1", "0"})
    for (std::size_t batch : {std::size_t(0), std::size_t(4096)}) {
      SCOPED_TRACE(std::string("QGPU_LOAD_ASYNC_ALLOC=") + mode + " batch_bytes " + std::to_string(batch));
      setenv("QGPU_LOAD_ASYNC_ALLOC", mode, 1);
      io::LoadOptions o = with("cuda");
      if (batch) o.batch_bytes = batch;
      expect_same(io::load(path, o), ref);
      o.scan_region = {2, 1, 8, 6};
      o.bin_detector = 4;
      EXPECT_EQ(test::as_vector<std::uint32_t>(io::load(path, o).read()),
                (test::expected_load<std::uint16_t, std::uint32_t>(s, all, o.scan_region, {}, 1, 4)));
      unsetenv("QGPU_LOAD_ASYNC_ALLOC");
    }
}

// A batch goes to the device in copies of QGPU_LOAD_COPY_STEP bytes while it is read (1 MiB pieces): with a step of 1
// byte every piece is its own copy (3 MiB batches of a noisy file of over 6 MiB: three or more copies a batch), with 0 one
// copy after the read; dense and encoded, each equal to the CPU reference.
TEST(LoadCuda, BatchesCopiedWhileReadLoadTheSame) {
  sample::SampleSpec s;
  s.scan_rows = 32;
  s.scan_cols = 30;
  s.det_rows = s.det_cols = 128;
  s.disk_radius_px = 48;
  s.dose_per_frame = 2e5;  // ~28 counts a pixel of the disk: a file of several MiB
  const std::string path = test::write_small_sample("copy_step.h5", s);
  ASSERT_GT(std::filesystem::file_size(path), std::uintmax_t(6) << 20);  // batches of several pieces each
  QGPU_REQUIRE_CUDA();
  const Dataset ref = io::load(path, with("cpu"));
  for (const char* step : {"1", "0", "3000000"})
    for (const char* rep : {"dense", "encoded"}) {
      SCOPED_TRACE(std::string("QGPU_LOAD_COPY_STEP=") + step + ", " + rep);
      setenv("QGPU_LOAD_COPY_STEP", step, 1);
      io::LoadOptions o = with("cuda");
      o.batch_bytes = std::size_t(3) << 20;
      o.representation = rep;
      const Dataset got = io::load(path, o);
      EXPECT_GE(got.provenance().parameters.at("timing").value("batches", 0), 4);
      EXPECT_TRUE(got.read().bytes == ref.read().bytes);
      unsetenv("QGPU_LOAD_COPY_STEP");
    }
}

// An encoded load takes its frame totals from the decoder (encoded::LiveGroups::totals: popcounts of the bit planes
// it writes) and the pixel mask subtracts what it zeroes: the totals equal the sums of the frames as the CPU
// reference loads them, with and without a mask of bright pixels, in both byte orders and for 8/16/32-bit counts.
TEST(LoadCuda, EncodedFrameTotalsAreTheLoadedFramesSums) {
  QGPU_REQUIRE_CUDA();
  const std::string mask = test::temp_path("totals_mask.txt");
  std::ofstream(mask) << "32 32\n31 33\n30 30\n0 5\n";  // the disk centre (always counted) and a dark pixel
  for (const DType t : {DType::u8, DType::u16, DType::u32})
    for (const bool big : {false, true}) {
      sample::SampleSpec s;
      s.scan_rows = 12, s.scan_cols = 20;  // 240 frames: tiles of 512 and the last one short
      s.det_rows = s.det_cols = 64;        // 4096 pixels: groups of 32 (the decoder's marks and totals)
      s.dtype = t;
      s.big_endian = big;
      const std::string path = test::write_small_sample(std::string("totals_") + dtype_name(t) + (big ? "be" : "") + ".h5", s);
      for (const bool masked : {false, true}) {
        SCOPED_TRACE(std::string(dtype_name(t)) + (big ? " big-endian" : "") + (masked ? ", masked" : ""));
        io::LoadOptions r = with("cpu");
        io::LoadOptions o = with("cuda");
        o.representation = "encoded";
        if (masked) r.pixel_mask_file = o.pixel_mask_file = mask;
        const HostArray4D ref = io::load(path, r).read();
        const std::size_t fp = 64 * 64, es = dtype_size(t), frames = 240;
        std::vector<std::uint64_t> want(frames, 0);
        for (std::size_t f = 0; f < frames; ++f)
          for (std::size_t p = 0; p < fp; ++p)
            for (std::size_t k = 0; k < es; ++k)
              want[f] += std::uint64_t(ref.bytes[(f * fp + p) * es + k]) << (8 * k);
        const Dataset got = io::load(path, o);
        ASSERT_NE(got.encoded(), nullptr);
        EXPECT_EQ(got.encoded()->frame_totals(), want);
        EXPECT_TRUE(got.read().bytes == ref.bytes);
        if (masked) EXPECT_EQ(got.provenance().parameters.at("bad_pixels_zeroed"), 4);
      }
    }
}

TEST(LoadCuda, CorruptChunksAreNamed) {
  QGPU_REQUIRE_CUDA();
  const std::pair<test::Damage, std::string> cases[] = {{test::Damage::header_size, "decoded size"},
                                                        {test::Damage::truncated, "truncated"},
                                                        {test::Damage::garbage, "corrupt"},
                                                        {test::Damage::block_length, "past the end"}};
  for (const auto& [d, needle] : cases) {
    sample::SampleSpec s;
    s.scan_rows = s.scan_cols = 6;
    s.det_rows = s.det_cols = 64;
    const std::string path = test::write_small_sample("c" + std::to_string(int(d)) + ".h5", s);
    test::rewrite_chunk(path, 21, [&](auto& b) { test::damage(b, d); });
    try {
      io::load(path, with("cuda"));
      ADD_FAILURE() << "corruption not detected: " << needle;
    } catch (const FormatError& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find("frame 21"), std::string::npos) << m;
      EXPECT_NE(m.find(needle), std::string::npos) << m;
    }
  }
}

TEST(LoadCuda, UncompressedDatasetIsRefusedClearly) {
  QGPU_REQUIRE_CUDA();
  sample::SampleSpec s;
  s.scan_rows = s.scan_cols = 2;
  s.det_rows = s.det_cols = 16;
  s.compress = false;
  const std::string path = test::write_small_sample("raw.h5", s);
  EXPECT_THROW(io::load(path, with("cuda")), FormatError);
  EXPECT_EQ(io::load(path, with("cpu")).shape(), (Shape4D{2, 2, 16, 16}));
}

TEST(LoadCuda, ZstdDatasetIsRefusedNamingTheCompression) {
  QGPU_REQUIRE_CUDA();
  const std::string path = test::temp_path("zstd.h5");
  ASSERT_TRUE(test::write_zstd_eiger_file(path, 4, 16, 16));
  try {
    io::load(path, with("cuda"));
    ADD_FAILURE() << "a bitshuffle+zstd dataset loaded on the GPU";
  } catch (const FormatError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("bitshuffle+zstd (cd_values[4]=3)"), std::string::npos) << m;
    EXPECT_NE(m.find("backend='cpu'"), std::string::npos) << m;
  }
}

// The encoder stream's priority in an encoded load (host code: runs without a GPU): high by default (unset, empty
// or "high"; the fastest on the H200: docs/history/benchmarks-2026-12.md), "low" gives
// the decode stream the priority, "same" (or anything else) none.
TEST(LoadCuda, EncoderStreamPriorityIsHighByDefault) {
  ::unsetenv("QGPU_ENCODER_PRIORITY");
  EXPECT_EQ(io::detail::encoder_priority_mode(), 1);
  ::setenv("QGPU_ENCODER_PRIORITY", "", 1);
  EXPECT_EQ(io::detail::encoder_priority_mode(), 1);
  ::setenv("QGPU_ENCODER_PRIORITY", "high", 1);
  EXPECT_EQ(io::detail::encoder_priority_mode(), 1);
  ::setenv("QGPU_ENCODER_PRIORITY", "low", 1);
  EXPECT_EQ(io::detail::encoder_priority_mode(), -1);
  ::setenv("QGPU_ENCODER_PRIORITY", "same", 1);
  EXPECT_EQ(io::detail::encoder_priority_mode(), 0);
  ::unsetenv("QGPU_ENCODER_PRIORITY");
}
