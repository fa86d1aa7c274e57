#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "core/error.hpp"
#include "device/backend_request.hpp"
#include "device/cuda/cuda_check.hpp"
#include "device/cuda/cufft_check.hpp"
#include "device/device.hpp"
#include "support/cuda_required.hpp"

using namespace qgpu;

TEST(Device, CpuIsAlwaysThereWhenAskedFor) { EXPECT_EQ(resolve("cpu"), Backend::cpu); }

TEST(Device, UnknownBackendIsRejected) {
  EXPECT_THROW(resolve("gpu0"), InvalidArgument);
  EXPECT_THROW(resolve(""), InvalidArgument);
}

TEST(Device, CudaAndAutoNeverFallBack) {
  unsetenv("QGPU_BACKEND");  // what auto means without it
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

TEST(Device, QgpuBackendSetsWhatAutoMeansAndAnExplicitChoiceWins) {
  setenv("QGPU_BACKEND", "cpu", 1);
  EXPECT_EQ(resolve("auto"), Backend::cpu);
  EXPECT_EQ(requested_backend("auto"), "cpu");
  EXPECT_EQ(requested_backend("cuda"), "cuda");
  if (!detect().cuda_available) EXPECT_THROW(resolve("cuda"), BackendUnavailable);
  setenv("QGPU_BACKEND", "opencl", 1);
  try {
    resolve("auto");
    ADD_FAILURE() << "an unknown QGPU_BACKEND was accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("QGPU_BACKEND: unknown backend 'opencl' (expected cuda, cpu, vulkan or auto)"),
              std::string::npos) << e.what();
  }
  EXPECT_EQ(resolve("cpu"), Backend::cpu);  // an explicit backend never reads it
  unsetenv("QGPU_BACKEND");
}

TEST(Device, ReportsTheGpuOnGpuMachines) {
  QGPU_REQUIRE_CUDA();
  std::cout << "[ device ] " << detect().name << " x" << detect().device_count << "\n";
  EXPECT_TRUE(detect().reason.empty());
}

// CUDA failures become typed errors naming the call (checked with error codes: no GPU needed).
TEST(CudaCheck, FailuresAreTypedErrors) {
  EXPECT_NO_THROW(QGPU_CUDA(cudaSuccess));
  try {
    cuda_check(cudaErrorMemoryAllocation, "cudaMalloc(&p, 1 << 40)");
    FAIL() << "no exception";
  } catch (const OutOfMemory& e) {
    EXPECT_NE(std::string(e.what()).find("cudaMalloc(&p, 1 << 40)"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("free"), std::string::npos) << e.what();  // free memory, or why unknown
  }
  EXPECT_THROW(cuda_check(cudaErrorIllegalAddress, "kernel"), DeviceError);
  try {
    cuda_check(cudaErrorIllegalAddress, "kernel");
  } catch (const OutOfMemory&) {
    FAIL() << "an illegal address is not out of memory";
  } catch (const DeviceError& e) {
    EXPECT_NE(std::string(e.what()).find("CUDA error in kernel"), std::string::npos);
  }
  EXPECT_THROW(cufft_check(CUFFT_ALLOC_FAILED, "cufftPlan2d"), OutOfMemory);
  EXPECT_THROW(cufft_check(CUFFT_EXEC_FAILED, "cufftExecR2C"), DeviceError);
}
