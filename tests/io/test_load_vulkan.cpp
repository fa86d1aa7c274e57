// The vulkan load (bitshuffle+LZ4 decoded by a compute shader into Vulkan device memory; the host decode, then an
// upload, where the shader cannot serve) equals the simulator's frames and the cpu load byte for byte; region and
// frame reads, crop and bin, damaged chunks, provenance. Skipped where no Vulkan device exists.
#include <gtest/gtest.h>

#include "core/error.hpp"
#include "detector/virtual_detector.hpp"
#include "io/hdf5/load.hpp"
#include "io/npy/npy.hpp"
#include "load_reference.hpp"
#include "corrupt.hpp"
#include "support/gpu_backends.hpp"
#include "support/temp_files.hpp"

using namespace qgpu;

namespace {

sample::SampleSpec spec(DType t) {
  sample::SampleSpec s;
  s.scan_rows = 6;
  s.scan_cols = 8;
  s.det_rows = 20;
  s.det_cols = 24;
  s.dtype = t;
  return s;
}

io::LoadOptions on(const std::string& backend) {
  io::LoadOptions o;
  o.backend = backend;
  return o;
}

}  // namespace

TEST(LoadVulkan, EveryDtypeEqualsTheSimulatorAndTheCpuLoad) {
  QGPU_REQUIRE_BACKEND(Backend::vulkan);
  for (DType t : {DType::u8, DType::u16, DType::u32}) {
    const sample::SampleSpec s = spec(t);
    const std::string path = test::write_small_sample("vk_" + dtype_name(t) + ".h5", s);
    const Dataset ds = io::load(path, on("vulkan"));
    EXPECT_EQ(ds.backend(), Backend::vulkan);
    EXPECT_EQ(ds.residency(), "gpu");
    EXPECT_EQ(ds.representation(), "dense");
    EXPECT_EQ(ds.dtype(), t);
    EXPECT_EQ(ds.provenance().backend, "vulkan");
    EXPECT_EQ(ds.provenance().operation, "io.load");
    EXPECT_NE(ds.provenance().parameters.value("decode", "").find("compute shader"), std::string::npos);
    EXPECT_FALSE(ds.provenance().parameters.value("vulkan_device", "").empty());
    dispatch_count_dtype(t, [&](auto z) {
      using T = decltype(z);
      const std::vector<T> all = test::simulated<T>(s);
      EXPECT_EQ(test::as_vector<T>(ds.read()), all) << dtype_name(t);
      // a region of scan positions and detector pixels, read back from device memory
      const Region sr{1, 2, 3, 5}, dr{4, 3, 10, 7};
      EXPECT_EQ(test::as_vector<T>(ds.read(sr, dr)), (test::expected_load<T, T>(s, all, sr, dr, 1, 1)));
      // one frame
      const Region one{5, 7, 1, 1};
      EXPECT_EQ(test::as_vector<T>(ds.read(one)), (test::expected_load<T, T>(s, all, one, {}, 1, 1)));
    });
    // the whole dataset back on the host, and the queries on both sides
    const Dataset cpu = io::load(path, on("cpu"));
    EXPECT_EQ(ds.to_host().read().bytes, cpu.read().bytes);
    EXPECT_EQ(detector::sum_pattern(ds).counts("t").data, detector::sum_pattern(cpu).counts("t").data);
  }
}

TEST(LoadVulkan, CropAndBinAsOnCpu) {
  QGPU_REQUIRE_BACKEND(Backend::vulkan);
  const sample::SampleSpec s = spec(DType::u16);
  const std::string path = test::write_small_sample("vk_bin.h5", s);
  io::LoadOptions o = on("vulkan");
  o.scan_region = {0, 0, 6, 8};
  o.detector_region = {2, 4, 16, 16};
  o.bin_scan = 2;
  o.bin_detector = 2;
  const Dataset ds = io::load(path, o);
  o.backend = "cpu";
  const Dataset cpu = io::load(path, o);
  EXPECT_EQ(ds.shape(), cpu.shape());
  EXPECT_EQ(ds.dtype(), cpu.dtype());
  EXPECT_EQ(ds.read().bytes, cpu.read().bytes);
}

TEST(LoadVulkan, EncodedIsRefusedNamingTheBackend) {
  QGPU_REQUIRE_BACKEND(Backend::vulkan);
  const std::string path = test::write_small_sample("vk_enc.h5", spec(DType::u16));
  io::LoadOptions o = on("vulkan");
  o.representation = "encoded";
  try {
    io::load(path, o);
    ADD_FAILURE() << "an encoded vulkan load was accepted";
  } catch (const BackendUnavailable& e) {
    EXPECT_NE(std::string(e.what()).find("vulkan"), std::string::npos) << e.what();
  }
}

// The shader decoder against the host decode: frames of full blocks, a partial block and a verbatim tail, for each
// element size; busy frames (many LZ4 literals and matches). A frame that is not a whole number of 32-bit words
// (45 x 47 uint8 / uint16) goes through the host decode, and the provenance says why.
TEST(LoadVulkan, ShaderDecodeEqualsHostDecodeWithPartialBlocksAndTails) {
  QGPU_REQUIRE_BACKEND(Backend::vulkan);
  // 100 x 83 = 8300 uint8: a full block of 8192, a partial block of 104, a tail of 4; 70 x 65 = 4550 uint16: 4096,
  // 448, 6; 50 x 45 = 2250 uint32: 2048, 200, 2; 45 x 47 = 2115 elements: 4-byte words only for uint32
  const std::pair<std::size_t, std::size_t> sizes[] = {{100, 83}, {70, 65}, {50, 45}, {45, 47}, {64, 64}};
  for (const auto& [r, c] : sizes)
    for (DType t : {DType::u8, DType::u16, DType::u32}) {
      sample::SampleSpec s;
      s.scan_rows = 3;
      s.scan_cols = 5;
      s.det_rows = r;
      s.det_cols = c;
      s.dtype = t;
      s.dose_per_frame = 50000;
      const std::string path = test::write_small_sample("vks" + std::to_string(r) + dtype_name(t) + ".h5", s);
      SCOPED_TRACE(path);
      const Dataset vk = io::load(path, on("vulkan")), cpu = io::load(path, on("cpu"));
      EXPECT_EQ(vk.read().bytes, cpu.read().bytes);
      const std::string decode = vk.provenance().parameters.value("decode", "");
      const bool words = (r * c * dtype_size(t)) % 4 == 0;
      EXPECT_NE(decode.find(words ? "compute shader" : "not whole 32-bit words"), std::string::npos) << decode;
    }
}

TEST(LoadVulkan, ManyBatchesAndScanRegionsOnTheShaderPath) {
  QGPU_REQUIRE_BACKEND(Backend::vulkan);
  sample::SampleSpec s;
  s.scan_rows = 12;
  s.scan_cols = 10;
  s.det_rows = s.det_cols = 48;
  const std::string path = test::write_small_sample("vkb.h5", s);
  io::LoadOptions o = on("vulkan");
  o.batch_bytes = 4096;  // many batches of one output row
  const Dataset many = io::load(path, o);
  EXPECT_NE(many.provenance().parameters.value("decode", "").find("compute shader"), std::string::npos);
  EXPECT_GT(many.provenance().parameters["timing"].value("batches", 0), 10);
  EXPECT_EQ(many.read().bytes, io::load(path, on("cpu")).read().bytes);
  o.scan_region = {2, 1, 8, 6};  // whole frames of a scan region: still the shader
  const Dataset region = io::load(path, o);
  io::LoadOptions oc = o;
  oc.backend = "cpu";
  EXPECT_EQ(region.shape(), (Shape4D{8, 6, 48, 48}));
  EXPECT_EQ(region.read().bytes, io::load(path, oc).read().bytes);
}

TEST(LoadVulkan, CropFallsBackToTheHostDecodeSayingWhy) {
  QGPU_REQUIRE_BACKEND(Backend::vulkan);
  const std::string path = test::write_small_sample("vk_crop.h5", spec(DType::u16));
  io::LoadOptions o = on("vulkan");
  o.detector_region = {2, 4, 16, 16};
  const std::string decode = io::load(path, o).provenance().parameters.value("decode", "");
  EXPECT_NE(decode.find("host"), std::string::npos) << decode;
  EXPECT_NE(decode.find("cropping or binning"), std::string::npos) << decode;
}

TEST(LoadVulkan, CorruptChunksAreNamed) {
  QGPU_REQUIRE_BACKEND(Backend::vulkan);
  for (const test::Damage d :
       {test::Damage::header_size, test::Damage::truncated, test::Damage::garbage, test::Damage::block_length}) {
    sample::SampleSpec s;
    s.scan_rows = s.scan_cols = 6;
    s.det_rows = s.det_cols = 64;
    const std::string path = test::write_small_sample("vkc" + std::to_string(int(d)) + ".h5", s);
    test::rewrite_chunk(path, 21, [&](auto& b) { test::damage(b, d); });
    try {
      io::load(path, on("vulkan"));
      ADD_FAILURE() << "corruption not detected: damage " << int(d);
    } catch (const FormatError& e) {
      EXPECT_NE(std::string(e.what()).find("frame 21"), std::string::npos) << e.what();
    }
  }
}

// Plain records (a NumPy file) through the shader: copied, big-endian elements byte-swapped, equal to the cpu load.
TEST(LoadVulkan, NpyRecordsThroughTheShaderEqualCpuBothByteOrders) {
  QGPU_REQUIRE_BACKEND(Backend::vulkan);
  const std::vector<std::size_t> shape{4, 5, 12, 10};
  const std::size_t n = 4 * 5 * 12 * 10;
  for (const DType t : {DType::u8, DType::u16, DType::u32})
    for (const bool big : {false, true}) {
      const std::size_t es = dtype_size(t);
      std::vector<std::uint8_t> bytes(n * es);
      for (std::size_t i = 0; i < n; ++i) {
        const std::uint32_t v = std::uint32_t((i * 2654435761u) >> (32 - 8 * es)) ^ std::uint32_t(i);
        for (std::size_t b = 0; b < es; ++b) bytes[i * es + (big ? es - 1 - b : b)] = std::uint8_t(v >> (8 * b));
      }
      const std::string descr = std::string(es == 1 ? "|" : big ? ">" : "<") + "u" + std::to_string(es);
      const std::string path = test::temp_path("vk_plain_" + dtype_name(t) + (big ? "be" : "le") + ".npy");
      io::write_npy(path, descr, shape, bytes.data(), bytes.size());
      SCOPED_TRACE(path);
      const Dataset vk = io::load(path, on("vulkan")), cpu = io::load(path, on("cpu"));
      EXPECT_NE(vk.provenance().parameters.value("decode", "").find("compute shader"), std::string::npos)
          << vk.provenance().parameters.value("decode", "");
      EXPECT_EQ(vk.read().bytes, cpu.read().bytes);
    }
}
