// GPU backends against the CPU reference: CoM bit for bit on cuda and vulkan (one parametrised suite), iDPC on cuda
// within 1e-5 relative. Each skipped where its backend is unusable.
#include <gtest/gtest.h>

#include <cstring>

#include "core/error.hpp"
#include "dpc/com.hpp"
#include "device/cuda/buffer_pool.hpp"
#include "dpc/idpc.hpp"
#include "dpc/pipeline.hpp"
#include "dpc/rotation.hpp"
#include "dpc_fixtures.hpp"
#include "parallax/parallax_fixtures.hpp"
#include "resident/encoded/encoded_resident.hpp"
#include "support/cuda_required.hpp"
#include "support/gpu_backends.hpp"

namespace qgpu::dpc {
namespace {

void expect_identical(const ComResult& gpu, const ComResult& cpu, Backend backend = Backend::cuda) {
  ASSERT_EQ(gpu.com_row.rows, cpu.com_row.rows);
  ASSERT_EQ(gpu.com_row.cols, cpu.com_row.cols);
  ASSERT_EQ(gpu.com_row.data.size(), cpu.com_row.data.size());
  EXPECT_EQ(gpu.empty_frames, cpu.empty_frames);
  std::size_t differing = 0;
  for (std::size_t i = 0; i < cpu.com_row.data.size(); ++i) {
    // Bit for bit: compare the representations, not the values.
    if (std::memcmp(&gpu.com_row.data[i], &cpu.com_row.data[i], sizeof(float)) != 0 ||
        std::memcmp(&gpu.com_col.data[i], &cpu.com_col.data[i], sizeof(float)) != 0) {
      if (differing++ < 5)
        ADD_FAILURE() << "frame " << i << ": gpu (" << gpu.com_row.data[i] << ", " << gpu.com_col.data[i]
                      << ") cpu (" << cpu.com_row.data[i] << ", " << cpu.com_col.data[i] << ")";
    }
  }
  EXPECT_EQ(differing, 0u);
  EXPECT_EQ(gpu.provenance.backend, backend_name(backend));
  EXPECT_EQ(cpu.provenance.backend, "cpu");
}

std::vector<std::uint8_t> ring_mask(std::size_t rows, std::size_t cols) {
  std::vector<std::uint8_t> m(rows * cols);
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c = 0; c < cols; ++c) {
      const double dr = r - rows / 2.0, dc = c - cols / 2.0, d2 = dr * dr + dc * dc;
      m[r * cols + c] = d2 > 4 && d2 < (rows * rows) / 6.0 ? 1 : 0;
    }
  return m;
}

class ComGpu : public ::testing::TestWithParam<Backend> {};

TEST_P(ComGpu, Uint16MatchesCpuBitForBit) {
  QGPU_REQUIRE_BACKEND(GetParam());
  const Dataset host = testing::poisson_dataset<std::uint16_t>({32, 32, 64, 64}, 300.0, 101);
  const Dataset gpu = host.to_backend(GetParam());
  ASSERT_EQ(gpu.backend(), GetParam());
  const ComResult c = center_of_mass(host), g = center_of_mass(gpu);
  EXPECT_GT(c.empty_frames, 0u);
  expect_identical(g, c, GetParam());
}

TEST_P(ComGpu, WithMaskMatchesCpuBitForBit) {
  QGPU_REQUIRE_BACKEND(GetParam());
  const Dataset host = testing::poisson_dataset<std::uint16_t>({32, 32, 64, 64}, 300.0, 102);
  ComOptions o;
  o.mask = ring_mask(64, 64);
  expect_identical(center_of_mass(host.to_backend(GetParam()), o), center_of_mass(host, o), GetParam());
}

TEST_P(ComGpu, Uint8AndUint32MatchCpuBitForBit) {
  QGPU_REQUIRE_BACKEND(GetParam());
  const Dataset h8 = testing::poisson_dataset<std::uint8_t>({16, 24, 64, 64}, 120.0, 103);
  expect_identical(center_of_mass(h8.to_backend(GetParam())), center_of_mass(h8), GetParam());
  // Large uint32 counts: the exact 64-bit sums matter here.
  const Dataset h32 = testing::make_dataset<std::uint32_t>({8, 8, 48, 32}, [](auto sr, auto sc, auto dr, auto dc) {
    const std::uint64_t h = (sr * 73856093u) ^ (sc * 19349663u) ^ (dr * 83492791u) ^ (dc * 2654435761u);
    return std::uint32_t(h % 4000000000u);
  });
  expect_identical(center_of_mass(h32.to_backend(GetParam())), center_of_mass(h32), GetParam());
  ComOptions o;
  o.mask = ring_mask(48, 32);
  expect_identical(center_of_mass(h32.to_backend(GetParam()), o), center_of_mass(h32, o), GetParam());
}

TEST_P(ComGpu, OddDetectorWidthUsesGeneralPathAndMatches) {
  QGPU_REQUIRE_BACKEND(GetParam());
  // 61 columns: not a multiple of the 16-byte vector, so the per-pixel kernel runs.
  const Dataset host = testing::poisson_dataset<std::uint16_t>({12, 10, 50, 61}, 80.0, 104);
  expect_identical(center_of_mass(host.to_backend(GetParam())), center_of_mass(host), GetParam());
  ComOptions o;
  o.mask = ring_mask(50, 61);
  expect_identical(center_of_mass(host.to_backend(GetParam()), o), center_of_mass(host, o), GetParam());
}

TEST_P(ComGpu, SingleBrightPixelOnGpu) {
  QGPU_REQUIRE_BACKEND(GetParam());
  const Dataset host = testing::make_dataset<std::uint16_t>({5, 6, 32, 32}, [](auto sr, auto sc, auto dr, auto dc) {
    if (sr == 2 && sc == 3) return std::uint16_t(0);
    return std::uint16_t(dr == (sr * 5 + sc) % 32 && dc == (sc * 7 + sr) % 32 ? 65535 : 0);
  });
  const ComResult g = center_of_mass(host.to_backend(GetParam()));
  EXPECT_EQ(g.empty_frames, 1u);
  for (std::size_t sr = 0; sr < 5; ++sr)
    for (std::size_t sc = 0; sc < 6; ++sc) {
      const bool empty = sr == 2 && sc == 3;
      EXPECT_EQ(g.com_row.at(sr, sc), empty ? 15.5f : float((sr * 5 + sc) % 32));
      EXPECT_EQ(g.com_col.at(sr, sc), empty ? 15.5f : float((sc * 7 + sr) % 32));
    }
}

TEST_P(ComGpu, BadMaskRejectedOnGpuToo) {
  QGPU_REQUIRE_BACKEND(GetParam());
  const Dataset gpu = testing::poisson_dataset<std::uint16_t>({2, 2, 16, 16}, 50.0, 105).to_backend(GetParam());
  ComOptions o;
  o.mask.assign(10, 1);
  EXPECT_THROW(center_of_mass(gpu, o), InvalidArgument);
}

// Every element kind, detectors whose rows hold whole 16-byte vectors (6 x 48; 36 x 40: 16- and 32-bit kinds), whose
// frames hold whole 32-bit words only (38 x 41: 16-bit kinds; 4 x 3: an 8-bit word spans rows) or neither (37 x 41),
// frame counts of no particular multiple; no mask (every pixel), a mask of few pixels (vulkan: the pixel list) and one of
// most pixels (vulkan: every pixel with the mask's weight).
template <class T> void check_com_paths(Backend b, const Shape4D& sh, std::uint64_t range, std::int64_t lo) {
  SCOPED_TRACE(dtype_name(dtype_of<T>::value) + " " + std::to_string(sh.det_rows) + "x" + std::to_string(sh.det_cols));
  const Dataset host = testing::make_dataset<T>(sh, [&](auto sr, auto sc, auto dr, auto dc) {
    const std::uint64_t h = (sr * 73856093u) ^ (sc * 19349663u) ^ (dr * 83492791u) ^ (dc * 2654435761u);
    return T(std::int64_t(h % range) + lo);
  });
  const Dataset gpu = host.to_backend(b);
  expect_identical(center_of_mass(gpu), center_of_mass(host), b);
  const std::size_t fp = sh.frame_pixels();
  ComOptions few, most;
  few.mask.assign(fp, 0);
  most.mask.assign(fp, 1);
  for (std::size_t p = 1; p < fp; p += 3) {
    few.mask[p] = 1;
    most.mask[p] = 0;
  }
  few.mask[fp - 1] = 1;
  most.mask[fp - 1] = 0;
  expect_identical(center_of_mass(gpu, few), center_of_mass(host, few), b);
  expect_identical(center_of_mass(gpu, most), center_of_mass(host, most), b);
}

TEST_P(ComGpu, EveryKindMaskedOrNotMatchesCpuBitForBit) {
  QGPU_REQUIRE_BACKEND(GetParam());
  for (const Shape4D sh : {Shape4D{1, 13, 36, 40}, Shape4D{3, 5, 6, 48}, Shape4D{3, 5, 38, 41}, Shape4D{3, 5, 37, 41},
                           Shape4D{5, 3, 4, 3}}) {
    check_com_paths<std::uint8_t>(GetParam(), sh, 256, 0);
    check_com_paths<std::uint16_t>(GetParam(), sh, 65536, 0);
    check_com_paths<std::uint32_t>(GetParam(), sh, 4000000000u, 0);
    if (GetParam() != Backend::vulkan) continue;  // signed data: the vulkan sums are the reference's int64 sums
    check_com_paths<std::int8_t>(GetParam(), sh, 256, -128);
    check_com_paths<std::int16_t>(GetParam(), sh, 65536, -32768);
    check_com_paths<std::int32_t>(GetParam(), sh, 4000000000u, -2000000000);
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, ComGpu, QGPU_GPU_BACKENDS);

// iDPC on the GPU backends (cuFFT r2c/c2r; VkFFT c2c of G_row + i G_col), both complex64, against the CPU
// reference's FFTW in double: within 1e-5 relative (L2 over the map).
class IdpcGpu : public ::testing::TestWithParam<Backend> {};

void expect_idpc_parity(Backend b, const testing::AnalyticField& f, const IdpcOptions& o) {
  SCOPED_TRACE(std::to_string(f.grad_row.rows) + "x" + std::to_string(f.grad_row.cols) + " " +
               idpc_padding_name(o.padding));
  const Image<float> c = idpc(f.grad_row, f.grad_col, o);
  const Image<float> g = idpc(on_backend(f.grad_row, b), on_backend(f.grad_col, b), o);
  ASSERT_EQ(g.rows, c.rows);
  ASSERT_EQ(g.cols, c.cols);
  EXPECT_LE(testing::relative_difference(g, c), 1e-5) << "gpu " << g.data[0] << " " << g.data[g.data.size() / 2]
                                                     << " cpu " << c.data[0] << " " << c.data[c.data.size() / 2];
  EXPECT_EQ(g.provenance.backend, backend_name(b));
  EXPECT_EQ(g.provenance.parameters.at("pad_row"), c.provenance.parameters.at("pad_row"));
}

TEST_P(IdpcGpu, MatchesCpuWithinOneInHundredThousand) {
  QGPU_REQUIRE_BACKEND(GetParam());
  expect_idpc_parity(GetParam(), testing::gaussian_field(128, 96, 201), {});
  expect_idpc_parity(GetParam(), testing::gaussian_field(33, 39, 202, 0.05, -0.02), {});  // odd sizes and a ramp
  IdpcOptions periodic;
  periodic.padding = IdpcPadding::periodic;
  expect_idpc_parity(GetParam(), testing::gaussian_field(64, 64, 203), periodic);
  expect_idpc_parity(GetParam(), testing::gaussian_field(35, 39, 208), periodic);  // odd domain, no Nyquist
  IdpcOptions steps;
  steps.step_row = 0.5;
  steps.step_col = 2.0;
  steps.padding = IdpcPadding::zeros;
  steps.pad = 10;
  expect_idpc_parity(GetParam(), testing::gaussian_field(40, 30, 204, 0, 0, 0.5, 2.0), steps);
  IdpcOptions zeros5;
  zeros5.padding = IdpcPadding::zeros;
  zeros5.pad = 5;
  expect_idpc_parity(GetParam(), testing::gaussian_field(81, 26, 210), zeros5);  // 91 x 36: factors 7, 13, 3
}

// Padded sizes with a prime factor above 13 (33 x 47 mirror: 66 x 94; 97 x 20: 194 x 40; 37 x 41: 74 x 82; 97 x 101
// zeros: 194 x 202): cuFFT takes them, VkFFT through its Bluestein path (device/vulkan/vkfft_plans.cpp).
TEST_P(IdpcGpu, LargePrimeSizesMatchTheCpu) {
  QGPU_REQUIRE_BACKEND(GetParam());
  for (const auto& f : {testing::gaussian_field(33, 47, 202, 0.05, -0.02), testing::gaussian_field(97, 20, 209),
                        testing::gaussian_field(37, 41, 211)})
    expect_idpc_parity(GetParam(), f, {});
  IdpcOptions zeros;
  zeros.padding = IdpcPadding::zeros;
  zeros.pad = 0;
  expect_idpc_parity(GetParam(), testing::gaussian_field(97, 101, 212), zeros);  // 97 x 101: both axes prime
  IdpcOptions periodic;
  periodic.padding = IdpcPadding::periodic;
  expect_idpc_parity(GetParam(), testing::gaussian_field(37, 41, 213), periodic);
}

// rotation_deg on a GPU backend: cuda rotates as it pads (RotatedArraySource), vulkan on the host first; either way
// bit for bit the same backend's potential of rotate_field's field (the same arithmetic, no contraction), and within
// 1e-5 of the CPU reference's.
TEST_P(IdpcGpu, RotationOptionEqualsTheRotatedFieldOnTheSameBackend) {
  QGPU_REQUIRE_BACKEND(GetParam());
  const Backend b = GetParam();
  const auto f = testing::gaussian_field(48, 36, 214, 0.02, 0.01);
  DpcResult d;
  d.dpc_row = f.grad_row;
  d.dpc_col = f.grad_col;
  for (const double angle : {23.0, -141.5})
    for (const bool transpose : {false, true}) {
      SCOPED_TRACE(std::to_string(angle) + (transpose ? " transposed" : ""));
      IdpcOptions o;
      o.rotation_deg = angle;
      o.transpose = transpose;
      const auto [fr, fc] = rotate_field(d, angle, transpose);
      const Image<float> want = idpc(on_backend(fr, b), on_backend(fc, b));
      const Image<float> got = idpc(on_backend(f.grad_row, b), on_backend(f.grad_col, b), o);
      EXPECT_EQ(got.data, want.data);
      EXPECT_LE(testing::relative_difference(got, idpc(fr, fc)), 1e-5);
    }
}

TEST_P(IdpcGpu, RecoversPotential) {
  QGPU_REQUIRE_BACKEND(GetParam());
  const auto f = testing::gaussian_field(64, 64, 205);
  const Image<float> g = idpc(on_backend(f.grad_row, GetParam()), on_backend(f.grad_col, GetParam()));
  EXPECT_LT(testing::relative_error_up_to_constant(g, f.phi), 5e-3);
}

// Repeated transforms reuse pooled device buffers and plans (cuda: buffer_pool.hpp, cufft_plans.hpp; vulkan: the
// VkFFT plan cache with its buffer): sizes and paddings interleaved, each answer within 1e-5 of the CPU reference
// and a repeat bit for bit the first answer (stale pooled contents must not leak in: every padded value and every
// cropped pixel is written each time).
TEST_P(IdpcGpu, RepeatedWithPooledBuffersMatchesCpuAndItself) {
  QGPU_REQUIRE_BACKEND(GetParam());
  IdpcOptions zeros;
  zeros.padding = IdpcPadding::zeros;
  IdpcOptions periodic;
  periodic.padding = IdpcPadding::periodic;
  const auto a = testing::gaussian_field(39, 55, 206, 0.02, 0.01);  // padded sizes of factors up to 13 (vulkan)
  const auto b = testing::gaussian_field(64, 48, 207);
  std::vector<std::vector<float>> first;
  for (int round = 0; round < 2; ++round) {
    std::size_t k = 0;
    for (const auto* f : {&a, &b, &a})
      for (const IdpcOptions& o : {IdpcOptions{}, zeros, periodic}) {
        SCOPED_TRACE("round " + std::to_string(round) + ", case " + std::to_string(k));
        const Image<float> c = idpc(f->grad_row, f->grad_col, o);
        const Image<float> g = idpc(on_backend(f->grad_row, GetParam()), on_backend(f->grad_col, GetParam()), o);
        EXPECT_LE(testing::relative_difference(g, c), 1e-5);
        if (round == 0)
          first.push_back(g.data);
        else
          EXPECT_EQ(g.data, first[k]);
        ++k;
      }
  }
  if (GetParam() == Backend::cuda) EXPECT_GT(pooled_idle_bytes(), 0u);  // the buffers went back to the pool
}

// The backends must agree on where the gradients live: one on the GPU and one on the host is refused.
TEST_P(IdpcGpu, MixedBackendsRefused) {
  QGPU_REQUIRE_BACKEND(GetParam());
  const auto f = testing::gaussian_field(16, 16, 211);
  EXPECT_THROW(idpc(on_backend(f.grad_row, GetParam()), f.grad_col), InvalidArgument);
}

// The GPU checks the gradients as it pads them (no host pass): a non-finite value is refused all the same.
TEST_P(IdpcGpu, NonFiniteGradientsRefusedOnTheDevice) {
  QGPU_REQUIRE_BACKEND(GetParam());
  const auto f = testing::gaussian_field(40, 30, 215);
  for (const float bad : {std::nanf(""), INFINITY}) {
    Image<float> col = f.grad_col;
    col.data[29 * 30 + 17] = bad;  // the last row: inside the source, read once per mirror copy
    EXPECT_THROW(idpc(on_backend(f.grad_row, GetParam()), on_backend(col, GetParam())), InvalidArgument);
  }
  // and the next request of that size is answered (the flag is cleared each time)
  const Image<float> c = idpc(f.grad_row, f.grad_col);
  const Image<float> g = idpc(on_backend(f.grad_row, GetParam()), on_backend(f.grad_col, GetParam()));
  EXPECT_LE(testing::relative_difference(g, c), 1e-5);
}

INSTANTIATE_TEST_SUITE_P(Backends, IdpcGpu, QGPU_GPU_BACKENDS);

// dpc::run_pipeline on a GPU-resident dataset integrates the field it makes from the CoM maps kept on the GPU (the
// field is not sent back up): every product equals the steps called one by one (whose iDPC uploads the host field)
// bit for bit, dense and encoded (the radial basis' CoM), rotation given or calibrated, every padding.
void expect_chain_equals_steps(const Dataset& ds, const PipelineParams& p, const std::string& what) {
  SCOPED_TRACE(what);
  const PipelineResult r = run_pipeline(ds, p);
  const ComResult com = center_of_mass(ds);
  const DpcResult d = centered_dpc(com, p.reference);
  const Rotation rot = p.rotation ? *p.rotation : Rotation{r.calibration->angle_deg, r.calibration->transpose};
  if (!p.rotation) {
    const RotationResult cal = calibrate_rotation(ds, d);
    EXPECT_EQ(cal.angle_deg, rot.angle_deg);
    EXPECT_EQ(cal.transpose, rot.transpose);
  }
  const auto [fr, fc] = rotate_field(d, rot.angle_deg, rot.transpose);
  const Image<float> phi = idpc(fr, fc, p.idpc_options);
  EXPECT_EQ(r.com.com_row.data, com.com_row.data);
  EXPECT_EQ(r.com.com_col.data, com.com_col.data);
  EXPECT_EQ(r.dpc.ref_row, d.ref_row);
  EXPECT_EQ(r.dpc.dpc_row.data, d.dpc_row.data);
  EXPECT_EQ(r.dpc.dpc_col.data, d.dpc_col.data);
  EXPECT_EQ(r.field_row.data, fr.data);
  EXPECT_EQ(r.field_col.data, fc.data);
  ASSERT_TRUE(r.idpc.has_value());
  ASSERT_EQ(r.idpc->data.size(), phi.data.size());
  EXPECT_EQ(std::memcmp(r.idpc->data.data(), phi.data.data(), phi.data.size() * sizeof(float)), 0);
  EXPECT_EQ(r.idpc->provenance.backend, "cuda");
  EXPECT_EQ(r.idpc->provenance.parameters.at("padding"), phi.provenance.parameters.at("padding"));
  EXPECT_EQ(r.idpc->provenance.parameters.at("pad_row"), phi.provenance.parameters.at("pad_row"));
  EXPECT_TRUE(r.idpc->provenance.parameters.contains("field_from"));
  // and the CPU reference of the same chain within the cuFFT tolerance
  const Image<float> cpu_phi = idpc(on_backend(fr, Backend::cpu), on_backend(fc, Backend::cpu), p.idpc_options);
  EXPECT_LE(testing::relative_difference(*r.idpc, cpu_phi), 1e-5);
}

TEST(PipelineGpu, DeviceChainEqualsTheStepsBitForBit) {
  QGPU_REQUIRE_CUDA();
  const Dataset host = testing::poisson_dataset<std::uint16_t>({24, 20, 32, 32}, 400.0, 331);
  const Dataset dense = host.to_device();
  RadialBasisRequest basis;
  basis.enabled = basis.required = true;
  basis.center = {{15.5, 15.5}};
  const Dataset encoded = encode_with_radial_basis(dense, basis);
  ASSERT_NE(encoded.encoded()->radial_basis(), nullptr);
  const Dataset plain_encoded = dense.to_encoded(64);  // the moment-sums CoM
  for (const IdpcPadding padding : {IdpcPadding::mirror, IdpcPadding::zeros, IdpcPadding::periodic}) {
    PipelineParams p;
    p.idpc = true;
    p.idpc_options.padding = padding;
    p.rotation = Rotation{-37.5, true};
    expect_chain_equals_steps(dense, p, "dense, " + idpc_padding_name(padding));
    expect_chain_equals_steps(encoded, p, "encoded with the basis, " + idpc_padding_name(padding));
    expect_chain_equals_steps(plain_encoded, p, "encoded, " + idpc_padding_name(padding));
    p.reference = std::pair<double, double>{15.25, 16.0};
    p.rotation = Rotation{112.0, false};
    expect_chain_equals_steps(encoded, p, "given reference, " + idpc_padding_name(padding));
  }
  // a scan of several of the mean's blocks (kHostBlock values each; the last one short): the GPU's mean in the host's
  // order, the same bits
  PipelineParams big;
  big.idpc = true;
  big.rotation = Rotation{71.0, false};
  expect_chain_equals_steps(testing::poisson_dataset<std::uint16_t>({300, 261, 8, 8}, 60.0, 333).to_device(), big,
                            "300 x 261 scan");
  // the calibrated rotation (the parallax fallback on this defocused sample), steps and result as on the host
  PipelineParams p;
  p.idpc = true;
  std::vector<std::string> steps;
  p.on_step = [&](const std::string& s) { steps.push_back(s); };
  expect_chain_equals_steps(parallax::testing::dataset(150).to_device(), p, "calibrated");
  EXPECT_EQ(steps, (std::vector<std::string>{"dpc", "rotation", "field", "idpc"}));
}

TEST(PipelineGpu, DeviceChainRefusesWhatTheStepsRefuse) {
  QGPU_REQUIRE_CUDA();
  const Dataset ds = testing::poisson_dataset<std::uint16_t>({8, 8, 16, 16}, 200.0, 332).to_device();
  PipelineParams p;
  p.idpc = true;
  p.rotation = Rotation{10, false};
  p.reference = std::pair<double, double>{NAN, 1.0};
  EXPECT_THROW(run_pipeline(ds, p), InvalidArgument);
  p.reference.reset();
  p.rotation = Rotation{INFINITY, false};
  EXPECT_THROW(run_pipeline(ds, p), InvalidArgument);
  p.rotation = Rotation{10, false};
  p.idpc_options.pad = 3;  // mirror padding has a fixed size
  EXPECT_THROW(run_pipeline(ds, p), InvalidArgument);
  p.idpc_options.pad = 0;
  EXPECT_TRUE(run_pipeline(ds, p).idpc.has_value());  // and then answers
}

// Centred DPC keeps the CoM's backend (a host operation on host maps), so the chain's later steps run there too;
// its values equal the CPU reference's bit for bit since the CoM does.
TEST_P(ComGpu, CenteredDpcKeepsBackendAndMatchesCpu) {
  QGPU_REQUIRE_BACKEND(GetParam());
  const Dataset cpu = testing::poisson_dataset<std::uint16_t>({6, 5, 24, 24}, 300.0, 301);
  const Dataset gpu = cpu.to_backend(GetParam());
  const DpcResult c = centered_dpc(center_of_mass(cpu));
  const DpcResult g = centered_dpc(center_of_mass(gpu));
  EXPECT_EQ(g.provenance.backend, backend_name(GetParam()));
  EXPECT_EQ(g.ref_row, c.ref_row);
  EXPECT_EQ(g.ref_col, c.ref_col);
  EXPECT_EQ(g.dpc_row.data, c.dpc_row.data);
  EXPECT_EQ(g.dpc_col.data, c.dpc_col.data);
  EXPECT_EQ(g.dpc_row.provenance.backend, backend_name(GetParam()));
}

}  // namespace
}  // namespace qgpu::dpc
