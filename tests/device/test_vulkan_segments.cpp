// A resident cut into many segments (QGPU_VULKAN_MAX_BUFFER_BYTES=4096, set by ctest for this executable): every
// query and read crosses segment boundaries and still equals the CPU reference exactly.
#include <gtest/gtest.h>

#include "detector/virtual_detector.hpp"
#include "dpc/com.hpp"
#include "io/hdf5/load.hpp"
#include "support/temp_files.hpp"
#include "support/gpu_backends.hpp"

using namespace qgpu;

TEST(VulkanSegments, QueriesAndReadsAcrossSegmentsEqualCpu) {
  QGPU_REQUIRE_BACKEND(Backend::vulkan);
  HostArray4D h;
  h.shape = {9, 7, 12, 10};  // 240-byte frames of u16: 17 frames per 4096-byte segment, 63 frames
  h.dtype = DType::u16;
  h.bytes.resize(h.shape.elements() * 2);
  for (std::size_t i = 0; i < h.shape.elements(); ++i) h.as<std::uint16_t>()[i] = std::uint16_t((i * 40503u) % 9973);
  const Dataset host = Dataset::from_host(std::move(h), nlohmann::json::object(), Provenance{});
  const Dataset vk = host.to_vulkan();
  EXPECT_EQ(vk.read().bytes, host.read().bytes);
  EXPECT_EQ(vk.read({2, 1, 5, 6}, {1, 2, 9, 7}).bytes, host.read({2, 1, 5, 6}, {1, 2, 9, 7}).bytes);
  std::vector<std::uint32_t> w(120);
  for (std::size_t i = 0; i < w.size(); ++i) w[i] = std::uint32_t(1 + i % 3);
  // total-minus-complement (frame totals), the pixel list, every pixel with its weight
  for (const detector::Mask& m : {detector::annulus(12, 10, 5.5, 4.5, 2, 5), detector::disk(12, 10, 5.5, 4.5, 2.5),
                                  detector::from_weights(12, 10, w)})
    EXPECT_EQ(detector::virtual_image(vk, m).counts("t").data, detector::virtual_image(host, m).counts("t").data);
  EXPECT_EQ(detector::sum_pattern(vk).counts("t").data, detector::sum_pattern(host).counts("t").data);
  EXPECT_EQ(detector::max_pattern(vk).counts("t").data, detector::max_pattern(host).counts("t").data);
  const dpc::ComResult a = dpc::center_of_mass(vk), b = dpc::center_of_mass(host);
  EXPECT_EQ(a.com_row.data, b.com_row.data);
  EXPECT_EQ(a.com_col.data, b.com_col.data);
  dpc::ComOptions few, most;  // the CoM's pixel list and its masked pass over every pixel
  few.mask.assign(120, 0);
  most.mask.assign(120, 1);
  for (std::size_t p = 0; p < 120; p += 5) few.mask[p] = 1 - (most.mask[p] = 0);
  for (const dpc::ComOptions& o : {few, most}) {
    const dpc::ComResult c = dpc::center_of_mass(vk, o), d = dpc::center_of_mass(host, o);
    EXPECT_EQ(c.com_row.data, d.com_row.data);
    EXPECT_EQ(c.com_col.data, d.com_col.data);
  }
}

// The load's shader decoder writes each batch's frames into the segments they fall in (one dispatch per segment):
// 960-byte frames, 4 per 4096-byte segment, batches of several 3-frame rows crossing segment boundaries (a sparse
// dose keeps a batch's compressed bytes under the 4096-byte buffer cap too).
TEST(VulkanSegments, ShaderDecodedLoadAcrossSegmentsEqualsCpu) {
  QGPU_REQUIRE_BACKEND(Backend::vulkan);
  sample::SampleSpec s;
  s.scan_rows = 8;
  s.scan_cols = 3;
  s.det_rows = 20;
  s.det_cols = 24;
  s.dose_per_frame = 100;
  const std::string path = test::write_small_sample("vkseg.h5", s);
  io::LoadOptions o;
  o.backend = "vulkan";
  o.batch_bytes = 2500;
  const Dataset vk = io::load(path, o);
  EXPECT_NE(vk.provenance().parameters.value("decode", "").find("compute shader"), std::string::npos);
  EXPECT_GT(vk.provenance().parameters["timing"].value("batches", 0), 1);
  o.backend = "cpu";
  EXPECT_EQ(vk.read().bytes, io::load(path, o).read().bytes);
}
