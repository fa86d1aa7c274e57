// The process-wide pools of device buffers and cuFFT plans (device/cuda/buffer_pool.hpp, cufft_plans.hpp): a lease
// given back is what the next lease of that kind gets, leases held at once are distinct, and idle buffers beyond
// the cap are freed. Skipped without a usable GPU.
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <thread>

#include "device/cuda/buffer_pool.hpp"
#include "device/cuda/cufft_plans.hpp"
#include "support/cuda_required.hpp"

namespace qgpu {
namespace {

TEST(DevicePoolsCuda, BuffersAreReusedAcrossLeasesAndThreads) {
  QGPU_REQUIRE_CUDA();
  constexpr std::size_t kBytes = (std::size_t(3) << 20) + 12345;  // a size no other test of this binary uses
  void* first = nullptr;
  {
    LeasedBuffer a(kBytes);
    ASSERT_NE(a.data(), nullptr);
    EXPECT_EQ(a.bytes(), kBytes);
    first = a.data();
    LeasedBuffer b(kBytes);  // held at the same time: another buffer
    EXPECT_NE(b.data(), a.data());
  }
  const std::size_t idle = pooled_idle_bytes();
  EXPECT_GE(idle, 2 * kBytes);
  void* on_thread = nullptr;
  std::thread([&] {
    LeasedBuffer c(kBytes);  // another thread gets a pooled one (the last given back)
    on_thread = c.data();
  }).join();
  EXPECT_NE(on_thread, nullptr);
  LeasedBuffer d(kBytes);
  EXPECT_TRUE(d.data() == first || d.data() == on_thread);
  EXPECT_EQ(pooled_idle_bytes(), idle - kBytes);  // one of the two is out again
  // The pooled memory works: a round trip through it.
  std::vector<unsigned char> in(kBytes), out(kBytes);
  for (std::size_t i = 0; i < kBytes; ++i) in[i] = static_cast<unsigned char>(i * 7 + 3);
  d.buffer().upload(in.data(), kBytes);
  d.buffer().download(out.data(), kBytes);
  EXPECT_EQ(in, out);
}

TEST(DevicePoolsCuda, BuffersBeyondTheIdleCapAreFreed) {
  QGPU_REQUIRE_CUDA();
  const std::size_t before = pooled_idle_bytes();
  const std::size_t cap = pool_idle_cap();
  EXPECT_GE(cap, std::size_t(1) << 30);
  EXPECT_LE(cap, std::size_t(4) << 30);
  { LeasedBuffer big(cap + 1); }  // larger than the cap: freed on return, never kept
  EXPECT_EQ(pooled_idle_bytes(), before);
}

TEST(DevicePoolsCuda, PlansAreReusedAndDistinctWhileHeld) {
  QGPU_REQUIRE_CUDA();
  cufftHandle first = 0;
  {
    const LeasedPlan a(48, 40, CUFFT_R2C);
    const LeasedPlan b(48, 40, CUFFT_R2C);
    EXPECT_NE(a.get(), b.get());
    first = a.get();
  }
  cufftHandle again = 0;
  std::thread([&] {
    const LeasedPlan c(48, 40, CUFFT_R2C);  // any thread reuses a pooled plan (one of the two given back)
    again = c.get();
  }).join();
  const LeasedPlan other(48, 40, CUFFT_C2R);  // another type: not one of the R2C plans
  const LeasedPlan same(48, 40, CUFFT_R2C);
  EXPECT_NE(other.get(), same.get());
  EXPECT_NE(other.get(), first);
  EXPECT_EQ(same.get(), again);  // the last one given back is the next one leased
}

}  // namespace
}  // namespace qgpu
