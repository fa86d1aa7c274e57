// The vulkan backend: selected only when asked for (auto stays cuda-first), an honest BackendUnavailable without a
// Vulkan device, the device report naming adapter and driver, residency round trips, operations not implemented
// there refused (never run elsewhere). Runs on lavapipe where mesa-vulkan-drivers is installed.
#include <gtest/gtest.h>

#include <cstdlib>
#include <iostream>

#include "core/error.hpp"
#include "detector/virtual_detector.hpp"
#include "device/backend_request.hpp"
#include "device/device.hpp"
#include "dpc/com.hpp"
#include "dpc/idpc.hpp"
#include "display/display.hpp"
#include "parallax/parallax.hpp"
#include "support/gpu_backends.hpp"

using namespace qgpu;

namespace {

Dataset counting_dataset(Shape4D s) {
  HostArray4D h;
  h.shape = s;
  h.dtype = DType::u16;
  h.bytes.resize(s.elements() * 2);
  for (std::size_t i = 0; i < s.elements(); ++i) h.as<std::uint16_t>()[i] = std::uint16_t((i * 2654435761u) >> 20);
  return Dataset::from_host(std::move(h), nlohmann::json::object(), Provenance{});
}

}  // namespace

TEST(Vulkan, AutoNeverChoosesVulkan) {
  unsetenv("QGPU_BACKEND");
  if (detect().cuda_available) {
    EXPECT_EQ(resolve("auto"), Backend::cuda);
  } else {
    try {
      resolve("auto");
      ADD_FAILURE() << "auto resolved without a CUDA GPU";
    } catch (const BackendUnavailable& e) {
      EXPECT_NE(std::string(e.what()).find("CUDA"), std::string::npos) << e.what();
    }
  }
}

TEST(Vulkan, SelectedWhenAskedOrUnavailableWithTheReason) {
  const DeviceReport& r = vulkan_report();
  if (r.vulkan_available) {
    EXPECT_EQ(resolve("vulkan"), Backend::vulkan);
    EXPECT_FALSE(r.vulkan_name.empty());
    EXPECT_FALSE(r.vulkan_driver.empty());
    std::cout << "[ vulkan ] " << r.vulkan_name << " (" << r.vulkan_type << "), " << r.vulkan_driver << ", Vulkan "
              << r.vulkan_api << "\n";
  } else {
    EXPECT_FALSE(r.vulkan_reason.empty());
    try {
      resolve("vulkan");
      ADD_FAILURE() << "vulkan resolved without a device";
    } catch (const BackendUnavailable& e) {
      EXPECT_NE(std::string(e.what()).find(r.vulkan_reason), std::string::npos) << e.what();
    }
  }
  setenv("QGPU_BACKEND", "vulkan", 1);
  EXPECT_EQ(requested_backend("auto"), "vulkan");
  if (r.vulkan_available) EXPECT_EQ(resolve("auto"), Backend::vulkan);
  else EXPECT_THROW(resolve("auto"), BackendUnavailable);
  unsetenv("QGPU_BACKEND");
  EXPECT_EQ(backend_of(on_backend(Image<float>{}, Backend::vulkan).provenance), Backend::vulkan);
}

TEST(Vulkan, ResidencyRoundTrips) {
  QGPU_REQUIRE_BACKEND(Backend::vulkan);
  const Dataset host = counting_dataset({7, 9, 13, 11});  // odd sizes: frames not a multiple of 4 bytes
  const Dataset vk = host.to_vulkan();
  EXPECT_EQ(vk.backend(), Backend::vulkan);
  EXPECT_EQ(describe(vk).at("backend"), "vulkan");
  EXPECT_EQ(vk.to_host().read().bytes, host.read().bytes);
  EXPECT_EQ(vk.to_backend(Backend::vulkan).read().bytes, host.read().bytes);
  EXPECT_THROW(vk.host_bytes(), Error);
  EXPECT_THROW(vk.to_encoded(), BackendUnavailable);
  // u8 with frames of an odd byte count: the shaders index elements inside 32-bit words
  HostArray4D h;
  h.shape = {5, 3, 7, 9};
  h.dtype = DType::u8;
  h.bytes.resize(h.shape.elements());
  for (std::size_t i = 0; i < h.bytes.size(); ++i) h.bytes[i] = std::uint8_t(i * 37 + 11);
  const Dataset h8 = Dataset::from_host(std::move(h), nlohmann::json::object(), Provenance{});
  const Dataset v8 = h8.to_vulkan();
  EXPECT_EQ(v8.read({1, 1, 2, 2}, {2, 3, 4, 5}).bytes, h8.read({1, 1, 2, 2}, {2, 3, 4, 5}).bytes);
  EXPECT_EQ(detector::sum_pattern(v8).counts("t").data, detector::sum_pattern(h8).counts("t").data);
  EXPECT_EQ(detector::max_pattern(v8).counts("t").data, detector::max_pattern(h8).counts("t").data);
  const detector::Mask m = detector::disk(7, 9, 3, 4, 2.5);
  EXPECT_EQ(detector::virtual_image(v8, m).counts("t").data, detector::virtual_image(h8, m).counts("t").data);
}

TEST(Vulkan, OperationsNotImplementedThereAreRefusedNotRunElsewhere) {
  QGPU_REQUIRE_BACKEND(Backend::vulkan);
  const Dataset vk = counting_dataset({4, 4, 16, 16}).to_vulkan();
  const dpc::ComResult com = dpc::center_of_mass(vk);
  EXPECT_EQ(com.provenance.backend, "vulkan");
  // iDPC and display run there now (their parity: tests/dpc, tests/display), and say so
  EXPECT_EQ(dpc::idpc(com.com_row, com.com_col).provenance.backend, "vulkan");
  EXPECT_EQ(display::render(com.com_row, display::DisplayOptions{}).provenance.backend, "vulkan");
  // so does SSB (its parity: tests/ssb SsbGpu); parallax does not: refused, naming the operation
  try {
    parallax::run(vk, parallax::ParallaxParams{});
    ADD_FAILURE() << "parallax ran on a vulkan dataset";
  } catch (const BackendUnavailable& e) {
    EXPECT_NE(std::string(e.what()).find("vulkan"), std::string::npos) << e.what();
  } catch (const InvalidArgument&) {
    // a parameter check before the backend's (the tiny counting dataset has no calibration): not a fallback
  }
}
