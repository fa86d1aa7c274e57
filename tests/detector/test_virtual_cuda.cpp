// GPU virtual detectors equal the CPU reference exactly on cuda and vulkan (both: the sparse pixel list,
// total-minus-complement and dense strategies), one parametrised suite.
#include <gtest/gtest.h>

#include <algorithm>
#include <type_traits>
#include <variant>

#include "core/error.hpp"
#include "detector/virtual_detector.hpp"
#include "dpc/com.hpp"
#include "support/gpu_backends.hpp"
#include "synthetic.hpp"
#include "detector/plan.hpp"

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

// Scan-binned answers (scan_bin) on a dense GPU dataset: the CPU reference's, and the CoM of the binned scan.
TEST_P(VirtualGpu, ScanBinnedAnswersEqualCpu) {
  QGPU_REQUIRE_BACKEND(GetParam());
  const Dataset host = test::synthetic<std::uint16_t>({12, 20, 48, 48}, 300);
  const Dataset gpu = host.to_backend(GetParam());
  for (std::size_t b : {2, 4}) {
    const SumImage g = bf(gpu, 6.0, Center{24, 24}, b), h = bf(host, 6.0, Center{24, 24}, b);
    EXPECT_EQ(g.rows(), 12 / b);
    EXPECT_EQ(g.counts("test").data, h.counts("test").data) << b;
    EXPECT_EQ(adf(gpu, 8.0, 20.0, Center{23.5, 24.5}, b).counts("test").data,
              adf(host, 8.0, 20.0, Center{23.5, 24.5}, b).counts("test").data) << b;
    dpc::ComOptions o;
    o.scan_bin = b;
    const dpc::ComResult cg = dpc::center_of_mass(gpu, o), ch = dpc::center_of_mass(host, o);
    EXPECT_EQ(cg.com_row.data, ch.com_row.data) << b;
    EXPECT_EQ(cg.com_col.data, ch.com_col.data) << b;
  }
  EXPECT_THROW(bf(gpu, 6.0, Center{24, 24}, 3), InvalidArgument);  // 20 % 3
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

namespace {

bool same_sums(const SumImage& a, const SumImage& b) {
  return a.dtype() == b.dtype() && a.visit([&](const auto& x) {
    return x.data == std::get<std::decay_t<decltype(x)>>(b.image).data;
  });
}

// Every strategy on every element kind, for frame sizes whose loads pack whole 32-bit words or not.
template <class T> void check_paths(Backend backend, Shape4D s, double lo, double hi) {
  const Dataset host = test::synthetic_values<T>(s, lo, hi, 11);
  const Dataset gpu = host.to_backend(backend);
  const std::size_t fp = s.frame_pixels();
  std::vector<std::uint32_t> few(fp, 0), half(fp, 0), many(fp, 3), dense(fp);
  few[0] = 1;  // first, last and one inner pixel
  few[fp - 1] = 1;
  few[fp / 2 + 1] = 1;
  for (std::size_t i = 0; i < fp / 2; ++i) half[2 * i] = 7;  // half the pixels (rounded down): still the list
  many[fp / 3] = 0;                                    // all but one pixel: the complement of one pixel
  // dense: weights near 2^32 (unsigned sums wrap modulo 2^64 as the reference's; signed ones stay in int64)
  for (std::size_t i = 0; i < fp; ++i)
    dense[i] = i % 9 == 4 ? 0 : std::is_signed_v<T> ? std::uint32_t(1 + i % 5 * 1000) : 4294967295u - i % 7;
  const std::pair<Mask, Strategy> masks[] = {
      {from_weights(s.det_rows, s.det_cols, few), Strategy::sparse},
      {from_weights(s.det_rows, s.det_cols, half), Strategy::sparse},
      {from_weights(s.det_rows, s.det_cols, many), Strategy::complement},
      {from_weights(s.det_rows, s.det_cols, dense), Strategy::dense},
  };
  const std::string name = dtype_name(host.dtype()) + " " + std::to_string(s.det_rows) + "x" +
                           std::to_string(s.det_cols) + " frames " + std::to_string(s.frames());
  for (const auto& [m, strategy] : masks) {
    ASSERT_EQ(plan_masked_sum(m).strategy, strategy) << name;
    const SumImage a = virtual_image(gpu, m), b = virtual_image(host, m);
    EXPECT_EQ(a.provenance().parameters.value("strategy", ""), strategy_name(strategy)) << name;
    EXPECT_TRUE(same_sums(a, b)) << name << " " << strategy_name(strategy);
  }
  // the complement again: the cached frame totals give the same sums
  EXPECT_TRUE(same_sums(virtual_image(gpu, masks[2].first), virtual_image(host, masks[2].first))) << name;
}

}  // namespace

TEST_P(VirtualGpu, ListComplementAndDensePathsEveryKindExact) {
  QGPU_REQUIRE_BACKEND(GetParam());
  // 13 and 15 frames (no multiple of the 4 frames of a list work group); detectors (vulkan's loads) of 36 x 40 and
  // 6 x 48 (frames of whole 16-byte vectors for every kind), 38 x 41 (whole 32-bit words for 16-bit kinds only),
  // 37 x 41 (odd: element by element) and 2 x 3 (fewer columns than elements per word).
  for (const Shape4D s : {Shape4D{1, 13, 36, 40}, Shape4D{3, 5, 6, 48}, Shape4D{3, 5, 38, 41}, Shape4D{3, 5, 37, 41},
                          Shape4D{13, 1, 2, 3}}) {
    check_paths<std::uint8_t>(GetParam(), s, 0, 255);
    check_paths<std::uint16_t>(GetParam(), s, 0, 65535);
    check_paths<std::uint32_t>(GetParam(), s, 0, 4294967295.0);
    check_paths<std::int8_t>(GetParam(), s, -128, 127);
    check_paths<std::int16_t>(GetParam(), s, -32768, 32767);
    check_paths<std::int32_t>(GetParam(), s, -2147483648.0, 2147483647.0);
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, VirtualGpu, QGPU_GPU_BACKENDS);
