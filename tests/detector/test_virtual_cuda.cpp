// GPU virtual detectors equal the CPU reference exactly: CUDA (sparse, total-minus-complement and dense strategies)
// and vulkan (the dense pass), one parametrised suite.
#include <gtest/gtest.h>

#include <algorithm>

#include "detector/virtual_detector.hpp"
#include "support/gpu_backends.hpp"
#include "synthetic.hpp"

using namespace qgpu;
using namespace qgpu::detector;

namespace {

template <class T> void check_all_strategies(Backend backend, Shape4D s, std::uint32_t max_count) {
  const Dataset host = test::synthetic<T>(s, max_count);
  const Dataset gpu = host.to_backend(backend);
  const double cr = s.det_rows / 2.0, cc = s.det_cols / 2.0;
  std::vector<std::uint32_t> weights(s.frame_pixels());
  for (std::size_t i = 0; i < weights.size(); ++i) weights[i] = std::uint32_t(1 + i % 5);
  const Mask masks[] = {
      disk(s.det_rows, s.det_cols, cr, cc, s.det_rows / 6.0),               // sparse
      annulus(s.det_rows, s.det_cols, cr, cc, s.det_rows / 8.0, 1e9),       // complement
      from_weights(s.det_rows, s.det_cols, std::vector<std::uint32_t>(s.frame_pixels(), 1)),  // complement, empty
      from_weights(s.det_rows, s.det_cols, weights),                        // dense
  };
  for (const Mask& m : masks) {
    const Image<std::uint64_t> a = virtual_image(gpu, m), b = virtual_image(host, m);
    EXPECT_EQ(a.provenance.backend, backend_name(backend));
    EXPECT_EQ(a.data, b.data) << dtype_name(dtype_of<T>::value) << " " << a.provenance.parameters.dump();
  }
  EXPECT_EQ(sum_pattern(gpu).counts("test").data, sum_pattern(host).counts("test").data);
  EXPECT_EQ(max_pattern(gpu).counts("test").data, max_pattern(host).counts("test").data);
  EXPECT_EQ(max_pattern(gpu).provenance().backend, backend_name(backend));
}

class VirtualGpu : public ::testing::TestWithParam<Backend> {};

}  // namespace

TEST_P(VirtualGpu, EqualsCpuForEveryStrategyAndDtype) {
  QGPU_REQUIRE_BACKEND(GetParam());
  check_all_strategies<std::uint8_t>(GetParam(), {16, 20, 64, 64}, 255);
  check_all_strategies<std::uint16_t>(GetParam(), {16, 20, 64, 64}, 65535);
  check_all_strategies<std::uint32_t>(GetParam(), {16, 20, 64, 64}, 4000000000u);
}

TEST_P(VirtualGpu, UnalignedFrameSizes) {
  QGPU_REQUIRE_BACKEND(GetParam());
  // 37 x 41 pixels: frames are not multiples of 16 bytes, so the scalar paths run.
  check_all_strategies<std::uint8_t>(GetParam(), {5, 7, 37, 41}, 255);
  check_all_strategies<std::uint16_t>(GetParam(), {5, 7, 37, 41}, 65535);
}

TEST_P(VirtualGpu, BfAdfAndDiskFitMatchCpu) {
  QGPU_REQUIRE_BACKEND(GetParam());
  const Dataset host = test::synthetic<std::uint16_t>({12, 12, 48, 48}, 300);
  const Dataset gpu = host.to_backend(GetParam());
  EXPECT_EQ(bf(gpu, 6.0, Center{24, 24}).counts("test").data, bf(host, 6.0, Center{24, 24}).counts("test").data);
  EXPECT_EQ(adf(gpu, 8.0, 20.0, Center{23.5, 24.5}).counts("test").data, adf(host, 8.0, 20.0, Center{23.5, 24.5}).counts("test").data);
  EXPECT_EQ(df(gpu, Center{10, 30}, 4.0).counts("test").data, df(host, Center{10, 30}, 4.0).counts("test").data);
  EXPECT_EQ(mean_pattern(gpu).data, mean_pattern(host).data);
  // The disk fit (on the exact sum pattern) is the same on both backends.
  const Dataset disk_host = test::disk_frames({6, 5, 48, 52}, 22.5, 27.25, 9, 200);
  const Dataset disk_gpu = disk_host.to_backend(GetParam());
  const DiskFit a = fit_bf_disk(disk_gpu), b = fit_bf_disk(disk_host);
  EXPECT_DOUBLE_EQ(a.center_row, b.center_row);
  EXPECT_DOUBLE_EQ(a.center_col, b.center_col);
  EXPECT_DOUBLE_EQ(a.radius, b.radius);
  EXPECT_DOUBLE_EQ(a.confidence, b.confidence);
  EXPECT_NEAR(b.radius, 9, 1);
  EXPECT_EQ(bf(disk_gpu).counts("test").data, bf(disk_host).counts("test").data);
}

TEST_P(VirtualGpu, SignedWeightsEqualCpuExactly) {
  QGPU_REQUIRE_BACKEND(GetParam());
  const Dataset host = test::synthetic<std::uint32_t>({9, 11, 40, 36}, 4000000000u);
  const Dataset gpu = host.to_backend(GetParam());
  SignedMask m{40, 36, std::vector<std::int64_t>(40 * 36)};
  for (std::size_t i = 0; i < m.weights.size(); ++i) m.weights[i] = std::int64_t(i % 7) - 3;  // dense, both signs
  const Image<std::int64_t> a = virtual_image(gpu, m), b = virtual_image(host, m);
  EXPECT_EQ(a.provenance.backend, backend_name(GetParam()));
  EXPECT_EQ(a.provenance.output_dtype, "int64");
  EXPECT_EQ(a.data, b.data);
  SignedMask sparse{40, 36, std::vector<std::int64_t>(40 * 36, 0)};
  sparse.weights[5] = -65536;
  sparse.weights[700] = 2;
  const Image<std::int64_t> sg = virtual_image(gpu, sparse), sh = virtual_image(host, sparse);
  EXPECT_EQ(sg.data, sh.data);
  EXPECT_LT(*std::min_element(sh.data.begin(), sh.data.end()), 0);  // the negative weight dominates somewhere
}

INSTANTIATE_TEST_SUITE_P(Backends, VirtualGpu, QGPU_GPU_BACKENDS);
