// The GPU load's batch buffers kept between loads (io/hdf5/cuda/kept_batch_buffers.hpp): a kept buffer of the
// requested size is handed out again (the same allocation), other sizes get new ones, the kept bytes are counted
// (admission counts them as free), make_room frees them only when the device lacks the room, any device allocation
// that finds too little memory frees them (and the buffer pool's idle buffers) and succeeds, and two encoded loads
// in a row (the second on the first one's kept buffers) give the CPU reference's counts.
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <algorithm>
#include <limits>

#include "device/cuda/buffer_pool.hpp"
#include "device/cuda/cuda_check.hpp"
#include "io/hdf5/cuda/kept_batch_buffers.hpp"
#include "io/hdf5/load.hpp"
#include "io/sample/sample.hpp"
#include "support/cuda_required.hpp"
#include "support/temp_files.hpp"

using namespace qgpu;
namespace kb = qgpu::io::cuda;

TEST(KeptBatchBuffersCuda, ReusedBySizeCountedAndFreedForRoom) {
  QGPU_REQUIRE_CUDA();
  kb::release_batch_buffers();
  ASSERT_EQ(kb::kept_batch_bytes(), 0u);
  EXPECT_EQ(kb::take_batch_buffer(0).bytes(), 0u);
  DeviceBuffer a = kb::take_batch_buffer(3 << 20);
  ASSERT_EQ(a.bytes(), std::size_t{3} << 20);
  void* const pa = a.data();
  kb::keep_batch_buffer(std::move(a));
  EXPECT_EQ(kb::kept_batch_bytes(), std::size_t{3} << 20);
  DeviceBuffer b = kb::take_batch_buffer(2 << 20);  // another size: a new buffer, the kept one stays
  EXPECT_NE(b.data(), pa);
  EXPECT_EQ(kb::kept_batch_bytes(), std::size_t{3} << 20);
  DeviceBuffer c = kb::take_batch_buffer(3 << 20);  // the kept one
  EXPECT_EQ(c.data(), pa);
  EXPECT_EQ(kb::kept_batch_bytes(), 0u);
  kb::keep_batch_buffer(std::move(b));
  kb::keep_batch_buffer(std::move(c));
  EXPECT_EQ(kb::kept_batch_bytes(), std::size_t{5} << 20);
  kb::make_room(1 << 20);  // the device has the room: nothing freed
  EXPECT_EQ(kb::kept_batch_bytes(), std::size_t{5} << 20);
  kb::make_room(std::numeric_limits<std::size_t>::max() / 2);  // it does not: the kept buffers go
  EXPECT_EQ(kb::kept_batch_bytes(), 0u);
}

TEST(KeptBatchBuffersCuda, EncodedLoadsInARowOnKeptBuffersEqualTheCpuLoad) {
  QGPU_REQUIRE_CUDA();
  sample::SampleSpec spec;  // 480 frames of 32 x 32 (a multiple of 32 pixels: the decoder marks live groups)
  spec.scan_rows = 12;
  spec.scan_cols = 40;
  spec.det_rows = spec.det_cols = 32;
  spec.threads = 2;
  const std::string file = test::write_small_sample("s.h5", spec);
  kb::release_batch_buffers();
  io::LoadOptions cpu;
  cpu.backend = "cpu";
  const Dataset ref = io::load(file, cpu);
  io::LoadOptions o;
  o.backend = "cuda";
  o.representation = "encoded";
  const Dataset first = io::load(file, o);
  const std::size_t kept = kb::kept_batch_bytes();
  EXPECT_GT(kept, 0u) << "the encoded load keeps its batch buffers";
  const Dataset second = io::load(file, o);
  EXPECT_EQ(kb::kept_batch_bytes(), kept) << "the second load took and gave back the same buffers";
  for (const Dataset* d : {&first, &second}) {
    ASSERT_TRUE(d->encoded());
    EXPECT_TRUE(d->read().bytes == ref.read().bytes) << "counts differ from the CPU load";
  }
}

// The device nearly full: a kept buffer and an idle pooled one, then a filler that leaves 1.25 GiB; an allocation
// of 2 GiB then fits only once the caches are freed, and it succeeds (no OutOfMemory), freeing both caches.
TEST(KeptBatchBuffersCuda, AnAllocationThatFindsTooLittleMemoryFreesTheCaches) {
  QGPU_REQUIRE_CUDA();
  kb::release_batch_buffers();
  std::size_t free = 0, total = 0;
  QGPU_CUDA(cudaMemGetInfo(&free, &total));
  constexpr std::size_t kGiB = std::size_t{1} << 30;
  const std::size_t cap = std::min(8 * kGiB, total / 16);
  ASSERT_GT(free, 8 * kGiB);
  const std::size_t kept_bytes = std::min(cap, free / 4) / 2;  // >= 1 GiB: with 1.25 GiB free, 2 GiB need it
  ASSERT_GE(kept_bytes, kGiB);
  DeviceBuffer k = kb::take_batch_buffer(kept_bytes);
  kb::keep_batch_buffer(std::move(k));
  ASSERT_EQ(kb::kept_batch_bytes(), kept_bytes);
  { LeasedBuffer lease(std::size_t{64} << 20); }  // idle in the pool now (or freed, when the pool is full)
  QGPU_CUDA(cudaMemGetInfo(&free, &total));
  DeviceBuffer filler(free - kGiB - kGiB / 4);  // 1.25 GiB left
  std::size_t left = 0;
  QGPU_CUDA(cudaMemGetInfo(&left, &total));
  ASSERT_LT(left, 2 * kGiB) << "the test needs the device nearly full";
  DeviceBuffer big(2 * kGiB);
  EXPECT_EQ(big.bytes(), 2 * kGiB);
  EXPECT_EQ(kb::kept_batch_bytes(), 0u) << "the kept buffers were freed for the allocation";
  EXPECT_EQ(pooled_idle_bytes(), 0u) << "the pool's idle buffers were freed for the allocation";
}
