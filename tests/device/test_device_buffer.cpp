// DeviceBuffer uploads and downloads: every byte comes back, for sizes below, at and around the pinned-bounce
// threshold (256 KiB), one chunk, two halves, and several 4 MiB chunks with a partial last one, at offsets; uploads
// from 32 MiB on (several threads' bounce buffers) land byte for byte, also after a kernel's write it must follow.
// Skipped without a usable GPU.
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <cstdint>
#include <algorithm>
#include <vector>

#include "core/error.hpp"
#include "device/cuda/device_buffer.hpp"
#include "support/cuda_required.hpp"

namespace qgpu {
namespace {

TEST(DeviceBufferCuda, DownloadsEverySizeAndOffsetExactly) {
  QGPU_REQUIRE_CUDA();
  constexpr std::size_t kMiB = std::size_t(1) << 20;
  const std::size_t total = 13 * kMiB + 4099;
  std::vector<std::uint8_t> data(total);
  std::uint32_t x = 12345;
  for (auto& b : data) {
    x = x * 1103515245u + 12345u;
    b = static_cast<std::uint8_t>(x >> 24);
  }
  DeviceBuffer d(total);
  d.upload(data.data(), total);
  constexpr std::size_t kKiB = 1024;
  for (const std::size_t bytes : {std::size_t{1}, 256 * kKiB - 1, 256 * kKiB, 256 * kKiB + 1, 2 * kMiB, 4 * kMiB + 1,
                                  8 * kMiB, 9 * kMiB + 3, total - 7}) {
    for (const std::size_t offset : {std::size_t{0}, std::size_t{7}}) {
      std::vector<std::uint8_t> got(bytes, 0xa5);
      d.download(got.data(), bytes, offset);
      EXPECT_TRUE(std::equal(got.begin(), got.end(), data.begin() + static_cast<std::ptrdiff_t>(offset)))
          << bytes << " bytes at offset " << offset;
    }
  }
  std::vector<std::uint8_t> past(16);
  EXPECT_THROW(d.download(past.data(), 16, total - 8), Error);
}

TEST(DeviceBufferCuda, LargeUploadsLandEveryByteAfterEarlierWork) {
  QGPU_REQUIRE_CUDA();
  constexpr std::size_t kMiB = std::size_t(1) << 20;
  for (const std::size_t bytes : {32 * kMiB, 32 * kMiB + 1, 77 * kMiB + 4099}) {
    std::vector<std::uint8_t> data(bytes);
    std::uint32_t x = static_cast<std::uint32_t>(bytes);
    for (auto& b : data) {
      x = x * 1103515245u + 12345u;
      b = static_cast<std::uint8_t>(x >> 24);
    }
    const std::size_t offset = 12345;
    DeviceBuffer d(bytes + offset + 7);
    // earlier work on the legacy default stream that the upload must follow (a memset of the whole buffer)
    ASSERT_EQ(cudaMemsetAsync(d.data(), 0xAB, d.bytes(), nullptr), cudaSuccess);
    d.upload(data.data(), bytes, offset);
    std::vector<std::uint8_t> back(d.bytes());
    d.download(back.data(), back.size());
    EXPECT_TRUE(std::equal(data.begin(), data.end(), back.begin() + offset)) << bytes;
    EXPECT_TRUE(std::all_of(back.begin(), back.begin() + offset, [](std::uint8_t v) { return v == 0xAB; }));
    EXPECT_TRUE(std::all_of(back.begin() + offset + bytes, back.end(), [](std::uint8_t v) { return v == 0xAB; }));
  }
}

}  // namespace
}  // namespace qgpu
