// DeviceBuffer uploads and downloads: every byte comes back, for sizes below, at and around the pinned-bounce
// threshold (256 KiB), one chunk, two halves, and several 4 MiB chunks with a partial last one, at offsets; uploads
// from 32 MiB on (several threads' bounce buffers) land byte for byte, also after a kernel's write it must follow.
// Skipped without a usable GPU.
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <cstdint>
#include <algorithm>
#include <atomic>
#include <mutex>
#include <stdexcept>
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

// download_in_step: several arrays in ranges of the same elements, each range handed to on_range once, after every
// array's values of it have arrived (on_range reads them), after earlier default-stream work; an on_range error
// comes back to the caller.
TEST(DeviceBufferCuda, DownloadInStepHandsEveryRangeOnceWithItsValues) {
  QGPU_REQUIRE_CUDA();
  for (const std::size_t count : {std::size_t{1}, std::size_t{1000}, (std::size_t(1) << 18) * 3 + 17}) {
    SCOPED_TRACE(count);
    std::vector<std::vector<std::uint32_t>> host(3, std::vector<std::uint32_t>(count));
    std::vector<DeviceBuffer> dev;
    for (std::size_t a = 0; a < 3; ++a) {
      for (std::size_t i = 0; i < count; ++i) host[a][i] = static_cast<std::uint32_t>(i * 3 + a) * 2654435761u;
      dev.emplace_back(count * 4 + 64);
      ASSERT_EQ(cudaMemsetAsync(dev[a].data(), 0, dev[a].bytes(), nullptr), cudaSuccess);
      dev[a].upload(host[a].data(), count * 4);
    }
    std::vector<std::vector<std::uint32_t>> got(3, std::vector<std::uint32_t>(count, 0xdeadbeefu));
    std::vector<std::uint8_t> seen(count, 0);
    std::atomic<std::size_t> wrong{0};
    download_in_step({got[0].data(), got[1].data(), got[2].data()}, {dev[0].data(), dev[1].data(), dev[2].data()},
                     count, 4, [&](std::size_t i0, std::size_t i1) {
                       for (std::size_t i = i0; i < i1; ++i) {
                         ++seen[i];
                         for (std::size_t a = 0; a < 3; ++a) wrong += got[a][i] != host[a][i];
                       }
                     });
    EXPECT_EQ(wrong.load(), 0u);
    EXPECT_TRUE(std::all_of(seen.begin(), seen.end(), [](std::uint8_t v) { return v == 1; }));
    for (std::size_t a = 0; a < 3; ++a) EXPECT_EQ(got[a], host[a]);
  }
  std::vector<float> out(1 << 20);
  DeviceBuffer d(out.size() * 4);
  EXPECT_THROW(download_in_step({out.data()}, {d.data()}, out.size(), 4,
                                [](std::size_t i0, std::size_t) {
                                  if (i0 > 0) throw std::runtime_error("on_range failed");
                                }),
               std::runtime_error);
}

}  // namespace
}  // namespace qgpu
