// The GPU load's batch buffers kept between loads (io/hdf5/cuda/kept_batch_buffers.hpp): a kept buffer of the
// requested size is handed out again (the same allocation), other sizes get new ones, the kept bytes are counted
// (admission counts them as free), make_room frees them only when the device lacks the room, any device allocation
// that finds too little memory frees them (and the buffer pool's idle buffers) and succeeds, and two encoded loads
// in a row (the second on the first one's kept buffers) give the CPU reference's counts. A released dense resident is
// kept for the next load of the same size (device/cuda/buffer_pool.hpp resident_buffer): a second file's load into
// it gives that file's counts, and an allocation that needs its room frees it.
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdlib>
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

// Two dense loads of different files of the same size: the second takes the memory the first released (the same
// device pointer) and holds the second file's counts, exactly the CPU load's, not the first one's.
TEST(KeptBatchBuffersCuda, ADenseReloadTakesTheReleasedResidentAndHoldsTheNewCounts) {
  QGPU_REQUIRE_CUDA();
  release_kept_resident();
  sample::SampleSpec spec;
  spec.scan_rows = 16;
  spec.scan_cols = 24;
  spec.det_rows = spec.det_cols = 32;
  spec.threads = 2;
  const std::string a = test::write_small_sample("ra.h5", spec);
  spec.seed = 7;
  spec.dose_per_frame = 9000;
  const std::string b = test::write_small_sample("rb.h5", spec);
  io::LoadOptions cpu;
  cpu.backend = "cpu";
  const Dataset ref_a = io::load(a, cpu), ref_b = io::load(b, cpu);
  ASSERT_FALSE(ref_a.read().bytes == ref_b.read().bytes) << "the two files must differ";
  io::LoadOptions o;
  o.backend = "cuda";
  const void* first_memory = nullptr;
  {
    const Dataset first = io::load(a, o);
    first_memory = first.device_buffer().data();
    EXPECT_TRUE(first.read().bytes == ref_a.read().bytes);
    EXPECT_EQ(kept_resident_bytes(), 0u);
  }
  EXPECT_EQ(kept_resident_bytes(), ref_a.nbytes()) << "the released resident is kept";
  const Dataset second = io::load(b, o);
  EXPECT_EQ(second.device_buffer().data(), first_memory) << "the reload took the kept memory";
  EXPECT_EQ(kept_resident_bytes(), 0u);
  EXPECT_TRUE(second.read().bytes == ref_b.read().bytes) << "the reload's counts are the second file's";
  {
    const Dataset third = io::load(b, o);  // while `second` holds the kept memory: another allocation
    EXPECT_NE(third.device_buffer().data(), first_memory);
    EXPECT_TRUE(third.read().bytes == ref_b.read().bytes);
  }
  EXPECT_EQ(kept_resident_bytes(), ref_a.nbytes()) << "the latest released one is kept";
  release_kept_resident();
  EXPECT_EQ(kept_resident_bytes(), 0u);
}

// QGPU_KEEP_RESIDENT=0: a released resident is freed at once; a resident of another size frees the kept one; an
// allocation that finds too little memory frees it and succeeds.
TEST(KeptBatchBuffersCuda, TheKeptResidentGoesWhenAskedForAnotherSizeOrRoom) {
  QGPU_REQUIRE_CUDA();
  release_kept_resident();
  kb::release_batch_buffers();
  constexpr std::size_t kMiB = std::size_t{1} << 20, kGiB = std::size_t{1} << 30;
  setenv("QGPU_KEEP_RESIDENT", "0", 1);
  resident_buffer(8 * kMiB).reset();
  unsetenv("QGPU_KEEP_RESIDENT");
  EXPECT_EQ(kept_resident_bytes(), 0u) << "QGPU_KEEP_RESIDENT=0 keeps none";
  resident_buffer(8 * kMiB).reset();
  EXPECT_EQ(kept_resident_bytes(), 8 * kMiB);
  EXPECT_EQ(take_kept_resident(4 * kMiB), nullptr) << "only a resident of exactly its size takes it";
  {
    const auto other = resident_buffer(4 * kMiB);
    EXPECT_EQ(kept_resident_bytes(), 0u) << "a resident of another size freed the kept one";
  }
  EXPECT_EQ(kept_resident_bytes(), 4 * kMiB);
  release_kept_resident();
  std::size_t free = 0, total = 0;
  QGPU_CUDA(cudaMemGetInfo(&free, &total));
  ASSERT_GT(free, 8 * kGiB);
  resident_buffer(2 * kGiB).reset();  // kept: 2 GiB
  ASSERT_EQ(kept_resident_bytes(), 2 * kGiB);
  QGPU_CUDA(cudaMemGetInfo(&free, &total));
  DeviceBuffer filler(free - kGiB - kGiB / 4);  // 1.25 GiB left
  DeviceBuffer big(3 * kGiB);                   // fits only in the kept resident's room
  EXPECT_EQ(big.bytes(), 3 * kGiB);
  EXPECT_EQ(kept_resident_bytes(), 0u) << "the kept resident was freed for the allocation";
}
