#include <gtest/gtest.h>

#include "core/error.hpp"
#include "device/device.hpp"
#include "support/cuda_required.hpp"

using namespace qgpu;

TEST(Device, CpuIsAlwaysThereWhenAskedFor) { EXPECT_EQ(resolve("cpu"), Backend::cpu); }

TEST(Device, UnknownBackendIsRejected) {
  EXPECT_THROW(resolve("gpu0"), InvalidArgument);
  EXPECT_THROW(resolve(""), InvalidArgument);
}

TEST(Device, CudaAndAutoNeverFallBack) {
  const DeviceReport& r = detect();
  if (r.cuda_available) {
    EXPECT_EQ(resolve("cuda"), Backend::cuda);
    EXPECT_EQ(resolve("auto"), Backend::cuda);
    EXPECT_GE(r.device_count, 1);
    EXPECT_FALSE(r.name.empty());
  } else {
    EXPECT_FALSE(r.reason.empty());
    EXPECT_THROW(resolve("cuda"), BackendUnavailable);
    EXPECT_THROW(resolve("auto"), BackendUnavailable);
  }
}

TEST(Device, ReportsTheGpuOnGpuMachines) {
  QGPU_REQUIRE_CUDA();
  std::cout << "[ device ] " << detect().name << " x" << detect().device_count << "\n";
  EXPECT_TRUE(detect().reason.empty());
}
