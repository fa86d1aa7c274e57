// The vulkan load (host decode, then the dense frames uploaded into Vulkan device memory) equals the simulator's
// frames; region and frame reads, crop and bin, provenance. Skipped where no Vulkan device exists.
#include <gtest/gtest.h>

#include "core/error.hpp"
#include "detector/virtual_detector.hpp"
#include "io/hdf5/load.hpp"
#include "load_reference.hpp"
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
    EXPECT_NE(ds.provenance().parameters.value("decode", "").find("host"), std::string::npos);
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
