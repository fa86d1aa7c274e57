// Region reads (Dataset::read / read_into): every rectangle shape against a brute-force copy of the frames, on the
// cpu backend, and the cuda dense and encoded residents against the cpu one byte for byte (the pinned multi-thread
// download: whole frames, whole detector rows, detector rectangles, frames larger than one bounce buffer).
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <random>

#include "core/error.hpp"
#include "detector/synthetic.hpp"
#include "device/cuda/device_buffer.hpp"
#include "support/cuda_required.hpp"

using namespace qgpu;

namespace {

// The rectangle copied pixel by pixel out of the host dataset's bytes.
HostBytes brute(const Dataset& host, const Region& s, const Region& d) {
  const Shape4D& sh = host.shape();
  const std::size_t es = dtype_size(host.dtype());
  HostBytes out;
  for (std::size_t r = s.row0; r < s.row0 + s.rows; ++r)
    for (std::size_t c = s.col0; c < s.col0 + s.cols; ++c)
      for (std::size_t i = d.row0; i < d.row0 + d.rows; ++i)
        for (std::size_t j = d.col0; j < d.col0 + d.cols; ++j) {
          const std::uint8_t* p =
              host.host_bytes().data() + (((r * sh.scan_cols + c) * sh.det_rows + i) * sh.det_cols + j) * es;
          out.insert(out.end(), p, p + es);
        }
  return out;
}

const std::vector<std::pair<Region, Region>> kRects = {
    {{}, {}},                                   // everything
    {{3, 5, 7, 11}, {}},                        // whole frames of a scan rectangle
    {{}, {2, 4, 9, 13}},                        // a detector rectangle everywhere
    {{1, 0, 6, 41}, {5, 0, 20, 48}},            // whole detector rows
    {{39, 40, 1, 1}, {47, 47, 1, 1}},           // one pixel of the last frame
};

TEST(ReadRegion, CpuEqualsBruteForce) {
  const Dataset host = test::synthetic<std::uint16_t>({40, 41, 48, 48}, 60000);
  for (const auto& [s, d] : kRects) {
    const Region rs = resolve_region(s, 40, 41, "scan"), rd = resolve_region(d, 48, 48, "detector");
    const HostArray4D got = host.read(s, d);
    EXPECT_EQ(got.shape, (Shape4D{rs.rows, rs.cols, rd.rows, rd.cols}));
    EXPECT_TRUE(got.bytes == brute(host, rs, rd)) << rs.row0 << "," << rs.col0 << " " << rd.row0 << "," << rd.col0;
  }
}

TEST(ReadRegion, ReadIntoChecksTheDestinationSize) {
  const Dataset host = test::synthetic<std::uint16_t>({4, 4, 8, 8}, 9);
  std::vector<std::uint8_t> buf(4 * 4 * 8 * 8 * 2 - 1);
  EXPECT_THROW(host.read_into({}, {}, buf.data(), buf.size()), InvalidArgument);
  EXPECT_THROW(host.read({0, 0, 5, 1}, {}), RegionError);
}

TEST(ReadRegionCuda, DenseAndEncodedEqualCpu) {
  QGPU_REQUIRE_CUDA();
  const Dataset host = test::synthetic<std::uint16_t>({40, 41, 48, 48}, 60000);
  const Dataset gpu = host.to_device(), enc = gpu.to_encoded(64);
  for (const auto& [s, d] : kRects) {
    const HostBytes want = host.read(s, d).bytes;
    EXPECT_TRUE(gpu.read(s, d).bytes == want);
    EXPECT_TRUE(enc.read(s, d).bytes == want);
  }
}

TEST(ReadRegionCuda, FramesLargerThanABounceBuffer) {
  QGPU_REQUIRE_CUDA();
  const Dataset host = test::synthetic<std::uint32_t>({2, 3, 1100, 1100}, 4000000000u);  // 4.8 MB frames
  const Dataset gpu = host.to_device();
  for (const auto& [s, d] : std::vector<std::pair<Region, Region>>{
           {{}, {}}, {{1, 1, 1, 2}, {5, 7, 1000, 1000}}, {{0, 2, 2, 1}, {10, 0, 1090, 1100}}})
    EXPECT_TRUE(gpu.read(s, d).bytes == host.read(s, d).bytes);
}

TEST(ReadRegionCuda, LargeDownloadThroughEveryThread) {
  QGPU_REQUIRE_CUDA();
  const std::size_t n = (std::size_t(37) << 20) + 3;  // over the parallel threshold, not a multiple of a piece
  std::vector<std::uint8_t> src(n), back(n);
  std::mt19937 g(5);
  for (auto& b : src) b = std::uint8_t(g());
  DeviceBuffer d(n + 16);
  d.upload(src.data(), n, 16);
  d.download(back.data(), n, 16);
  EXPECT_TRUE(back == src);
}

// The download's knobs (QGPU_READ_THREADS, QGPU_READ_POPULATE: threads faulting the destination in ahead of the
// copies) change nothing but the speed: fresh destinations every time, byte for byte.
TEST(ReadRegionCuda, DownloadKnobsKeepEveryByte) {
  QGPU_REQUIRE_CUDA();
  const std::size_t n = (std::size_t(45) << 20) + 1234;
  std::vector<std::uint8_t> src(n);
  std::mt19937 g(7);
  for (auto& b : src) b = std::uint8_t(g());
  DeviceBuffer d(n);
  d.upload(src.data(), n, 0);
  for (const auto& [threads, populate] : std::vector<std::pair<const char*, const char*>>{
           {"1", "0"}, {"16", "0"}, {"8", "4"}, {"2", "8"}, {"junk", "junk"}}) {
    setenv("QGPU_READ_THREADS", threads, 1);
    setenv("QGPU_READ_POPULATE", populate, 1);
    std::vector<std::uint8_t> back(n);
    d.download(back.data(), n, 0);
    EXPECT_TRUE(back == src) << "QGPU_READ_THREADS=" << threads << " QGPU_READ_POPULATE=" << populate;
  }
  unsetenv("QGPU_READ_THREADS");
  unsetenv("QGPU_READ_POPULATE");
}

}  // namespace
