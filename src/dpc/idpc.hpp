#pragma once
// Integrated DPC: the potential phi whose gradient is the given field, by Fourier integration
//   phi = IFFT[(kr F[G_row] + kc F[G_col]) / (2 pi i (kr^2 + kc^2))],  k = 0 term 0,
// k in cycles per unit length (numpy fftfreq(n, step)). At an even-size Nyquist row/column the odd-derivative
// numerator term (kr there, kc there) is zeroed: this keeps the spectrum Hermitian and equals the real part of a
// full complex inverse transform. phi is defined up to a constant (zero mean over the padded domain).
//
// Padding against edge artefacts (IdpcPadding):
// - mirror (default): the field is extended as the gradient of the mirrored potential (half-sample reflection;
//   the component normal to the mirror changes sign): n/2 before and n - n/2 after on each axis, so the domain
//   is 2n, the exact even extension of phi, periodic with no seam. Its size is fixed: pad must be 0.
// - zeros: pad pixels of zero gradient on each side of each axis (pad = 0: auto, n/2 before, n - n/2 after).
//   Fine for fields that vanish at the edges; a field with edge gradients leaks artefacts.
// - periodic: no padding (the field is taken as periodic); pad must be 0.
// The result is cropped back to the input shape.
//
// Backend cpu: FFTW in double precision (r2c/c2r). Backend cuda: cuFFT in single precision (complex64, r2c/c2r);
// only the unpadded gradients go to the device and the cropped potential comes back (padding and crop are kernels;
// device buffers and plans are pooled, so repeated requests of one size allocate nothing). Backend vulkan: VkFFT in
// single precision, one C2C each way of G_row + i G_col (the two spectra separated by symmetry in the filter
// shader); padding, filter and crop are compute shaders; plans cached per size (the first request of a size
// compiles VkFFT's kernels with glslang).
#include <cstddef>
#include <optional>
#include <string>

#include "core/image.hpp"
#include "device/device.hpp"

namespace qgpu::dpc {

enum class IdpcPadding { mirror, zeros, periodic };

struct IdpcOptions {
  IdpcPadding padding = IdpcPadding::mirror;
  std::size_t pad = 0;  // zeros: pixels on each side of each axis, 0 = auto; mirror / periodic: must be 0
  double step_row = 1, step_col = 1;  // sample spacing; phi = integral of G over lengths in these units
  // When set: the given maps are a centred DPC, rotated first by this angle (transposed first when transpose) with
  // dpc::rotate_field's arithmetic (the same bits), then integrated: the potential at a chosen rotation in one call
  // (cuda: rotated on the GPU as the field is padded, no host pass). Not with run_pipeline (which rotates itself).
  std::optional<double> rotation_deg;
  bool transpose = false;
};

std::string idpc_padding_name(IdpcPadding p);

// grad_row = d phi / d row, grad_col = d phi / d col (same shape, non-empty, finite; else InvalidArgument).
// Runs where the gradients live (backend_of their provenance, device.hpp; both must agree). A cuda input
// without a usable GPU raises BackendUnavailable (no fallback).
Image<float> idpc(const Image<float>& grad_row, const Image<float>& grad_col, const IdpcOptions& options = {});

}  // namespace qgpu::dpc
