// Signed-integer and float datasets: every query against sums written out here (int64 exact, float64 accumulation),
// on the cpu reference, and the CUDA kernels against it (exact for integers, 1e-9 relative for floats).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "detector/virtual_detector.hpp"
#include "dpc/com.hpp"
#include "support/gpu_backends.hpp"
#include "synthetic.hpp"

using namespace qgpu;
using namespace qgpu::detector;

namespace {

template <class T> const T* values(const Dataset& ds) { return reinterpret_cast<const T*>(ds.host_bytes().data()); }

// sum_k w[k] * frame[k] for every frame, in sum_t<T>, pixel order.
template <class T> std::vector<sum_t<T>> hand_sums(const Dataset& ds, const std::vector<std::uint32_t>& w) {
  const Shape4D& s = ds.shape();
  std::vector<sum_t<T>> out(s.frames(), 0);
  for (std::size_t f = 0; f < s.frames(); ++f)
    for (std::size_t k = 0; k < s.frame_pixels(); ++k)
      out[f] += sum_t<T>(w[k]) * sum_t<T>(values<T>(ds)[f * s.frame_pixels() + k]);
  return out;
}

template <class A> void expect_same(const std::vector<A>& got, const std::vector<A>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if constexpr (std::is_floating_point_v<A>)
      EXPECT_NEAR(got[i], want[i], 1e-9 * std::max(1.0, std::abs(want[i]))) << what << " at " << i;
    else
      EXPECT_EQ(got[i], want[i]) << what << " at " << i;
  }
}

template <class T> void check_cpu(Shape4D s, double lo, double hi) {
  using A = sum_t<T>;
  const Dataset ds = test::synthetic_values<T>(s, lo, hi);
  const std::string name = dtype_name(ds.dtype());
  const Mask m = disk(s.det_rows, s.det_cols, s.det_rows / 2.0, s.det_cols / 2.0, s.det_rows / 4.0);
  const SumImage img = virtual_image(ds, m);
  EXPECT_EQ(img.dtype(), dtype_of<A>::value) << name;
  EXPECT_EQ(img.provenance().output_dtype, dtype_name(dtype_of<A>::value));
  const Image<A> got = img;
  EXPECT_EQ(got.rows, s.scan_rows);
  expect_same(got.data, hand_sums<T>(ds, m.weights), name + " disk");

  std::vector<std::uint32_t> w(s.frame_pixels());
  for (std::size_t i = 0; i < w.size(); ++i) w[i] = std::uint32_t(i % 4);
  expect_same(Image<A>(virtual_image(ds, from_weights(s.det_rows, s.det_cols, w))).data, hand_sums<T>(ds, w),
              name + " weights");

  // sum and max patterns
  std::vector<A> sum(s.frame_pixels(), 0), most(s.frame_pixels(), A(std::numeric_limits<T>::lowest()));
  for (std::size_t f = 0; f < s.frames(); ++f)
    for (std::size_t k = 0; k < s.frame_pixels(); ++k) {
      const T v = values<T>(ds)[f * s.frame_pixels() + k];
      sum[k] += A(v);
      most[k] = std::max(most[k], A(v));
    }
  expect_same(Image<A>(sum_pattern(ds)).data, sum, name + " sum pattern");
  expect_same(Image<A>(max_pattern(ds)).data, most, name + " max pattern");
  const Image<float> mean = mean_pattern(ds);
  for (std::size_t k = 0; k < sum.size(); ++k)
    EXPECT_FLOAT_EQ(mean.data[k], float(double(sum[k]) / double(s.frames()))) << name;

  // signed weights: positive minus negative part
  SignedMask sm{s.det_rows, s.det_cols, std::vector<std::int64_t>(s.frame_pixels())};
  for (std::size_t i = 0; i < sm.weights.size(); ++i) sm.weights[i] = std::int64_t(i % 5) - 2;
  using R = std::conditional_t<std::is_floating_point_v<T>, double, std::int64_t>;
  const Image<R> signed_img = virtual_image(ds, sm);
  for (std::size_t f = 0; f < s.frames(); ++f) {
    R want = 0;
    for (std::size_t k = 0; k < s.frame_pixels(); ++k) want += R(sm.weights[k]) * R(values<T>(ds)[f * s.frame_pixels() + k]);
    if constexpr (std::is_floating_point_v<R>)
      EXPECT_NEAR(signed_img.data[f], want, 1e-9 * std::max(1.0, std::abs(want))) << name;
    else
      EXPECT_EQ(signed_img.data[f], want) << name;
  }

  // CoM: Sr / S and Sc / S from the same sums
  const dpc::ComResult com = dpc::center_of_mass(ds);
  for (std::size_t f = 0; f < s.frames(); ++f) {
    A t = 0, r = 0, c = 0;
    for (std::size_t k = 0; k < s.frame_pixels(); ++k) {
      const A v = A(values<T>(ds)[f * s.frame_pixels() + k]);
      t += v;
      r += v * A(k / s.det_cols);
      c += v * A(k % s.det_cols);
    }
    if (t == A(0)) continue;
    EXPECT_NEAR(com.com_row.data[f], double(r) / double(t), 1e-4 * std::max(1.0, std::abs(double(r) / double(t))));
    EXPECT_NEAR(com.com_col.data[f], double(c) / double(t), 1e-4 * std::max(1.0, std::abs(double(c) / double(t))));
  }

  // the encoded representation holds unsigned counts only
  EXPECT_THROW(ds.to_encoded(), DTypeError);
  // unsigned-only consumers name what they need
  EXPECT_THROW(sum_pattern(ds).counts("the product cache"), DTypeError);
}

template <class T> void check_gpu(Backend backend, Shape4D s, double lo, double hi) {
  using A = sum_t<T>;
  const Dataset host = test::synthetic_values<T>(s, lo, hi);
  const Dataset gpu = host.to_backend(backend);
  const std::string name = dtype_name(host.dtype());
  const double cr = s.det_rows / 2.0, cc = s.det_cols / 2.0;
  std::vector<std::uint32_t> weights(s.frame_pixels());
  for (std::size_t i = 0; i < weights.size(); ++i) weights[i] = std::uint32_t(1 + i % 5);
  const Mask masks[] = {
      disk(s.det_rows, s.det_cols, cr, cc, s.det_rows / 6.0),          // sparse
      annulus(s.det_rows, s.det_cols, cr, cc, s.det_rows / 8.0, 1e9),  // complement (frame totals)
      from_weights(s.det_rows, s.det_cols, weights),                   // dense
  };
  for (const Mask& m : masks) {
    const Image<A> a = virtual_image(gpu, m), b = virtual_image(host, m);
    EXPECT_EQ(a.provenance.backend, backend_name(backend));
    expect_same(a.data, b.data, name + " " + a.provenance.parameters.dump());
  }
  expect_same(Image<A>(sum_pattern(gpu)).data, Image<A>(sum_pattern(host)).data, name + " sum pattern");
  expect_same(Image<A>(max_pattern(gpu)).data, Image<A>(max_pattern(host)).data, name + " max pattern");
  const dpc::ComResult a = dpc::center_of_mass(gpu), b = dpc::center_of_mass(host);
  for (std::size_t f = 0; f < s.frames(); ++f) {
    EXPECT_NEAR(a.com_row.data[f], b.com_row.data[f], 1e-4 * std::max(1.0f, std::abs(b.com_row.data[f]))) << name;
    EXPECT_NEAR(a.com_col.data[f], b.com_col.data[f], 1e-4 * std::max(1.0f, std::abs(b.com_col.data[f]))) << name;
  }
}

class VirtualValuesGpu : public ::testing::TestWithParam<Backend> {};

}  // namespace

TEST(VirtualValues, SignedAndFloatOnCpu) {
  check_cpu<std::int8_t>({3, 4, 10, 12}, -128, 127);
  check_cpu<std::int16_t>({3, 4, 10, 12}, -32768, 32767);
  check_cpu<std::int32_t>({3, 4, 10, 12}, -2147483648.0, 2147483647.0);
  check_cpu<float>({3, 4, 10, 12}, -50.5, 1000.25);
}

TEST(VirtualValues, PositiveFloatsFindTheDisk) {
  // a float dataset of a disk: the BF fit works on float64 sums as on counts
  HostArray4D h;
  h.shape = {4, 4, 40, 40};
  h.dtype = DType::f32;
  h.bytes.resize(h.shape.elements() * 4);
  for (std::size_t i = 0; i < h.shape.elements(); ++i) {
    const std::size_t k = i % 1600, r = k / 40, c = k % 40;
    const double d2 = (r - 19.5) * (r - 19.5) + (c - 20.0) * (c - 20.0);
    h.as<float>()[i] = d2 <= 64 ? 10.5f : 0.25f;
  }
  const Dataset ds = Dataset::from_host(std::move(h), nlohmann::json::object(), Provenance{});
  const DiskFit fit = fit_bf_disk(ds);
  EXPECT_NEAR(fit.center_row, 19.5, 0.5);
  EXPECT_NEAR(fit.center_col, 20.0, 0.5);
  EXPECT_NEAR(fit.radius, 8.0, 1.0);
  const Image<double> img = bf(ds);
  EXPECT_GT(img.data[0], 0.0);
}

TEST_P(VirtualValuesGpu, SignedEqualCpu) {
  QGPU_REQUIRE_BACKEND(GetParam());
  check_gpu<std::int8_t>(GetParam(), {8, 10, 64, 64}, -128, 127);
  check_gpu<std::int16_t>(GetParam(), {8, 10, 37, 41}, -32768, 32767);
  check_gpu<std::int32_t>(GetParam(), {8, 10, 64, 64}, -2147483648.0, 2147483647.0);
}

TEST_P(VirtualValuesGpu, FloatEqualCpu) {
  QGPU_REQUIRE_BACKEND(GetParam());
  if (GetParam() == Backend::vulkan) {  // integer data only so far: refused, never converted
    EXPECT_THROW(test::synthetic_values<float>({2, 2, 8, 8}, -1, 1).to_vulkan(), DTypeError);
    return;
  }
  check_gpu<float>(GetParam(), {8, 10, 64, 64}, -50.5, 1000.25);
  check_gpu<float>(GetParam(), {5, 7, 37, 41}, -1e6, 1e6);
}

INSTANTIATE_TEST_SUITE_P(Backends, VirtualValuesGpu, QGPU_GPU_BACKENDS);
