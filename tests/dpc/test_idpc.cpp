// iDPC on the CPU reference: an analytic potential is recovered from its exact gradient.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <numbers>

#include "core/error.hpp"
#include "device/device.hpp"
#include "dpc/idpc.hpp"
#include "dpc/idpc_backend.hpp"
#include "dpc/pipeline.hpp"
#include "dpc/rotation.hpp"
#include "dpc_fixtures.hpp"

namespace qgpu::dpc {
namespace {

using testing::gaussian_field;
using testing::relative_error_up_to_constant;

// Tolerances: the Gaussians are smooth (sigma >= 0.04 of the field), so spectral integration of their sampled
// gradient is accurate to well under 1 % once the edges are handled.
TEST(Idpc, RecoversGaussianPotentialUpToAConstant) {
  const auto f = gaussian_field(96, 80, 1);
  const Image<float> phi = idpc(f.grad_row, f.grad_col);
  ASSERT_EQ(phi.rows, 96u);
  ASSERT_EQ(phi.cols, 80u);
  EXPECT_LT(relative_error_up_to_constant(phi, f.phi), 1e-4);  // measured 2.6e-7
  EXPECT_GT(testing::correlation(phi, f.phi), 0.9999);
}

TEST(Idpc, OddSizes) {
  const auto f = gaussian_field(33, 47, 2);
  const Image<float> phi = idpc(f.grad_row, f.grad_col);
  EXPECT_LT(relative_error_up_to_constant(phi, f.phi), 5e-3);
  EXPECT_EQ(phi.provenance.parameters.at("pad_row"), (std::vector<std::size_t>{16, 17}));
  EXPECT_EQ(phi.provenance.parameters.at("pad_col"), (std::vector<std::size_t>{23, 24}));
}

TEST(Idpc, ZeroPaddingWorksForFieldsVanishingAtTheEdges) {
  const auto f = gaussian_field(40, 56, 9);
  IdpcOptions o;
  o.padding = IdpcPadding::zeros;
  o.pad = 12;
  const Image<float> phi = idpc(f.grad_row, f.grad_col, o);
  EXPECT_LT(relative_error_up_to_constant(phi, f.phi), 2e-2);
  EXPECT_EQ(phi.provenance.parameters.at("pad_row"), (std::vector<std::size_t>{12, 12}));
  EXPECT_EQ(phi.provenance.parameters.at("padding"), "zeros");
  o.pad = 0;  // auto: half the extent on each side
  const Image<float> auto_pad = idpc(f.grad_row, f.grad_col, o);
  EXPECT_LT(relative_error_up_to_constant(auto_pad, f.phi), 2e-2);
  EXPECT_EQ(auto_pad.provenance.parameters.at("pad_col"), (std::vector<std::size_t>{28, 28}));
}

TEST(Idpc, SampleStepsScaleTheIntegral) {
  // phi is defined over lengths x = 0.5 * row, y = 2 * col; the gradient is d phi / dx, d phi / dy.
  const auto f = gaussian_field(64, 40, 3, 0, 0, 0.5, 2.0);
  IdpcOptions o;
  o.step_row = 0.5;
  o.step_col = 2.0;
  EXPECT_LT(relative_error_up_to_constant(idpc(f.grad_row, f.grad_col, o), f.phi), 5e-3);
  // Ignoring the steps integrates the wrong field.
  EXPECT_GT(relative_error_up_to_constant(idpc(f.grad_row, f.grad_col), f.phi), 0.1);
}

TEST(Idpc, MirrorPaddingKeepsARampThatOtherPaddingsLose) {
  // A constant gradient (mean deflection) is invisible to a periodic transform (its k = 0 term); the mirrored
  // field turns it into a triangle wave that integrates back to the ramp. Zero padding gets part of it.
  const auto f = gaussian_field(64, 64, 4, 0.05, -0.03);
  const Image<float> mirrored = idpc(f.grad_row, f.grad_col);
  IdpcOptions periodic;
  periodic.padding = IdpcPadding::periodic;
  const Image<float> wrapped = idpc(f.grad_row, f.grad_col, periodic);
  IdpcOptions zeros;
  zeros.padding = IdpcPadding::zeros;
  const Image<float> zero_padded = idpc(f.grad_row, f.grad_col, zeros);
  const double e_mirror = relative_error_up_to_constant(mirrored, f.phi);
  EXPECT_LT(e_mirror, 2e-2);
  EXPECT_GT(relative_error_up_to_constant(wrapped, f.phi), 0.3);
  EXPECT_GT(relative_error_up_to_constant(zero_padded, f.phi), 5 * e_mirror);
  EXPECT_EQ(wrapped.provenance.parameters.at("pad_row"), (std::vector<std::size_t>{0, 0}));
}

TEST(Idpc, PeriodicFieldIsExactWithoutPadding) {
  // phi = sin(2 pi 3 r / R) + cos(2 pi 2 c / C): periodic, so periodic integration is exact up to float error.
  const std::size_t R = 32, C = 48;
  Image<float> gr = testing::image(R, C), gc = testing::image(R, C), phi_true = testing::image(R, C);
  const double w_r = 2 * std::numbers::pi * 3 / R, w_c = 2 * std::numbers::pi * 2 / C;
  for (std::size_t r = 0; r < R; ++r)
    for (std::size_t c = 0; c < C; ++c) {
      phi_true.at(r, c) = float(std::sin(w_r * r) + std::cos(w_c * c));
      gr.at(r, c) = float(w_r * std::cos(w_r * r));
      gc.at(r, c) = float(-w_c * std::sin(w_c * c));
    }
  IdpcOptions o;
  o.padding = IdpcPadding::periodic;
  EXPECT_LT(relative_error_up_to_constant(idpc(gr, gc, o), phi_true), 1e-5);
}

TEST(Idpc, ProvenanceNamesBackendAndPadding) {
  const auto f = gaussian_field(16, 24, 5);
  const Image<float> phi = idpc(f.grad_row, f.grad_col);
  EXPECT_EQ(phi.provenance.operation, "dpc.idpc");
  EXPECT_EQ(phi.provenance.backend, "cpu");
  EXPECT_EQ(phi.provenance.output_shape, (std::vector<std::size_t>{16, 24}));
  EXPECT_EQ(phi.provenance.representation, "dense");
  EXPECT_EQ(phi.provenance.parameters.at("pad_row"), (std::vector<std::size_t>{8, 8}));
  EXPECT_EQ(phi.provenance.parameters.at("pad_col"), (std::vector<std::size_t>{12, 12}));
}

TEST(Idpc, BadInputsAreRejected) {
  const auto f = gaussian_field(16, 16, 6);
  const Image<float> other = testing::image(16, 15);
  EXPECT_THROW(idpc(f.grad_row, other), InvalidArgument);
  EXPECT_THROW(idpc(Image<float>{}, Image<float>{}), InvalidArgument);
  Image<float> nan_map = f.grad_col;
  nan_map.data[3] = std::nanf("");
  EXPECT_THROW(idpc(f.grad_row, nan_map), InvalidArgument);
  Image<float> short_data = f.grad_col;
  short_data.data.pop_back();
  EXPECT_THROW(idpc(f.grad_row, short_data), InvalidArgument);
  IdpcOptions pad_with_mirror;
  pad_with_mirror.pad = 4;  // mirror padding has a fixed size
  EXPECT_THROW(idpc(f.grad_row, f.grad_col, pad_with_mirror), InvalidArgument);
  IdpcOptions pad_with_periodic;
  pad_with_periodic.padding = IdpcPadding::periodic;
  pad_with_periodic.pad = 4;
  EXPECT_THROW(idpc(f.grad_row, f.grad_col, pad_with_periodic), InvalidArgument);
  IdpcOptions bad_step;
  bad_step.step_col = 0;
  EXPECT_THROW(idpc(f.grad_row, f.grad_col, bad_step), InvalidArgument);
}

// rotation_deg: the given maps rotated first with rotate_field's arithmetic, then integrated: bit for bit the
// potential of rotate_field's field (CPU reference), with and without the transpose; the provenance names it; a
// non-finite angle, and a rotation that overflows float, are rejected; the pipeline (which rotates itself) refuses it.
TEST(Idpc, RotationOptionEqualsTheRotatedFieldBitForBit) {
  const auto f = gaussian_field(40, 28, 14, 0.03, -0.01);
  DpcResult d;
  d.dpc_row = f.grad_row;
  d.dpc_col = f.grad_col;
  for (const double angle : {0.0, 17.5, -123.0})
    for (const bool transpose : {false, true}) {
      IdpcOptions o;
      o.rotation_deg = angle;
      o.transpose = transpose;
      const auto [fr, fc] = rotate_field(d, angle, transpose);
      const Image<float> want = idpc(fr, fc), got = idpc(f.grad_row, f.grad_col, o);
      EXPECT_EQ(got.data, want.data) << angle << " " << transpose;
      EXPECT_EQ(got.provenance.parameters.at("rotation_deg"), angle);
      EXPECT_EQ(got.provenance.parameters.at("transpose"), transpose);
    }
  EXPECT_TRUE(idpc(f.grad_row, f.grad_col).provenance.parameters.at("rotation_deg").is_null());
  IdpcOptions bad;
  bad.rotation_deg = std::numeric_limits<double>::infinity();
  EXPECT_THROW(idpc(f.grad_row, f.grad_col, bad), InvalidArgument);
  Image<float> huge = f.grad_row, huge_col = f.grad_col;
  huge.data[5] = huge_col.data[5] = 3e38f;  // rotated by 45 degrees: beyond float
  IdpcOptions turn;
  turn.rotation_deg = 45;
  EXPECT_THROW(idpc(huge, huge_col, turn), InvalidArgument);
  PipelineParams pp;
  pp.rotation = Rotation{10, false};
  pp.idpc_options.rotation_deg = 10;
  EXPECT_THROW(run_pipeline(d, pp), InvalidArgument);
}

TEST(Idpc, RunsWhereItsInputsLiveAndRejectsMixedBackends) {
  const auto f = gaussian_field(16, 16, 8);
  EXPECT_EQ(idpc(f.grad_row, f.grad_col).provenance.backend, "cpu");  // host values without provenance: cpu
  EXPECT_EQ(idpc(on_backend(f.grad_row, Backend::cpu), on_backend(f.grad_col, Backend::cpu)).provenance.backend, "cpu");
  EXPECT_THROW(idpc(on_backend(f.grad_row, Backend::cpu), on_backend(f.grad_col, Backend::cuda)), InvalidArgument);
  Image<float> unknown = f.grad_col;
  unknown.provenance.backend = "opencl";
  EXPECT_THROW(idpc(unknown, unknown), InvalidArgument);
}

TEST(Idpc, CudaBackendWithoutGpuRaisesInsteadOfFallingBack) {
  if (detect().cuda_available) GTEST_SKIP() << "a GPU is available: covered by the CUDA parity tests";
  const auto f = gaussian_field(16, 16, 8);
  EXPECT_THROW(idpc(on_backend(f.grad_row, Backend::cuda), on_backend(f.grad_col, Backend::cuda)), BackendUnavailable);
}

// The periodic extension both backends build (detail::padded_value) on a 2x3 field, written out by hand: mirror
// copies reflect about the half sample (index -1 -> 0, n -> n - 1) and negate the component normal to that axis;
// zero padding is 0 wherever either index is outside.
TEST(Idpc, PaddedExtensionFollowsTheMirrorAndZeroRules) {
  const float gr[6] = {1, 2, 3, 4, 5, 6}, gc[6] = {10, 20, 30, 40, 50, 60};  // rows x cols = 2 x 3
  auto at = [&](bool mirror, std::size_t q, std::size_t p) {  // padding 2 before on both axes
    float a, b;
    detail::padded_value(gr, gc, 2, 3, 2, 2, mirror, q, p, a, b);
    return std::pair<float, float>{a, b};
  };
  using P = std::pair<float, float>;
  EXPECT_EQ(at(true, 2, 2), P(1, 10));    // source (0, 0)
  EXPECT_EQ(at(true, 3, 4), P(6, 60));    // source (1, 2)
  EXPECT_EQ(at(true, 1, 2), P(-1, 10));   // row -1 -> row 0, row component negated
  EXPECT_EQ(at(true, 0, 2), P(-4, 40));   // row -2 -> row 1
  EXPECT_EQ(at(true, 4, 3), P(-5, 50));   // row 2 -> row 1
  EXPECT_EQ(at(true, 5, 3), P(-2, 20));   // row 3 -> row 0
  EXPECT_EQ(at(true, 2, 1), P(1, -10));   // col -1 -> col 0, col component negated
  EXPECT_EQ(at(true, 3, 5), P(6, -60));   // col 3 -> col 2
  EXPECT_EQ(at(true, 1, 6), P(-2, -20));  // row -1 -> row 0, col 4 -> col 1: both negated
  EXPECT_EQ(at(false, 2, 2), P(1, 10));
  EXPECT_EQ(at(false, 1, 2), P(0, 0));
  EXPECT_EQ(at(false, 3, 5), P(0, 0));
  EXPECT_EQ(at(false, 3, 4), P(6, 60));
}

}  // namespace
}  // namespace qgpu::dpc
