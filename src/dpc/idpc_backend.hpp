#pragma once
// Internal: the Fourier integration of a gradient field extended to a periodic one (mirror or zero padding), per
// backend, and what both share: the padding rule and the k-space filter.
#include <cstddef>
#include <functional>
#include <utility>
#include <vector>

#include "core/hd.hpp"
#include "core/image.hpp"
#include "core/numbers.hpp"
#include "device/device.hpp"
#include "dpc/idpc.hpp"

namespace qgpu::dpc::detail {

// The gradients (rows x cols, host) and their periodic extension: padded_rows x padded_cols with the source at
// (pad_row, pad_col); the backends build the extension (padded_value), integrate it and crop the source region.
struct PaddedField {
  std::size_t rows = 0, cols = 0;
  const float* grad_row = nullptr;  // rows * cols each, row-major
  const float* grad_col = nullptr;
  std::size_t padded_rows = 0, padded_cols = 0;
  std::size_t pad_row = 0, pad_col = 0;  // padding before the source on each axis
  bool mirror = false;                   // mirror extension; else zeros outside the source
  double step_row = 1, step_col = 1;
  // cuda: the source is a centred DPC, rotated (rotated_value, after the transpose) as it is padded
  bool rotate = false, transpose = false;
  double cos = 1, sin = 0;
};

// idpc's checks of the options alone (pad against padding, steps): InvalidArgument.
void check_idpc_options(const IdpcOptions& o);
// The padded domain of a rows x cols field under (checked) options, without data pointers; InvalidArgument when it
// is too large for the transforms.
PaddedField padded_geometry(std::size_t rows, std::size_t cols, const IdpcOptions& o);
// The provenance idpc gives the potential of (grad_row, grad_col) integrated on `backend` over f.
Provenance idpc_provenance(const Image<float>& grad_row, const Image<float>& grad_col, Backend backend,
                           const PaddedField& f, const IdpcOptions& o);

// rows * cols potential, cropped from the padded domain's (zero mean there). FFTW double / cuFFT complex64.
// cuFFT: the gradients' finiteness is checked on the GPU (InvalidArgument, as idpc's host check for the others).
std::vector<float> integrate_fftw(const PaddedField& f);
std::vector<float> integrate_cufft(const PaddedField& f);
// vulkan: one VkFFT C2C of G_row + i G_col each way, complex64 (dpc/vulkan/idpc_vkfft.cpp).
std::vector<float> integrate_vkfft(const PaddedField& f);

// The rotated centred DPC of CoM maps already on the GPU (DeviceMaps): at each position
//   d = float(double(com) - ref) per component, (fr, fc) = transpose ? (d_col, d_row) : (d_row, d_col),
//   field_row = float(cos fr - sin fc), field_col = float(sin fr + cos fc),
// the arithmetic of centered_dpc and rotate_field (no contraction on either side: the same bits). ref: given, or
// (mean_reference) the mean of the maps summed on the GPU in mean_com's order (the same bits as the host's).
struct DeviceComField {
  const float* com_row = nullptr;
  const float* com_col = nullptr;
  bool mean_reference = false;
  double ref_row = 0, ref_col = 0;  // when given (not mean_reference)
  double cos = 1, sin = 0;
  bool transpose = false;
};
// cuFFT integration of that field (f: padded_geometry, no data pointers) without sending it up. The GPU work is
// queued on a stream of its own (it overlaps the caller's downloads), then `host_side(reference)` runs on another
// host thread while this one waits for the GPU and downloads the potential; `reference()` waits for and returns the
// reference used. An exception of either side is rethrown once both have ended.
using ReferenceGetter = std::function<std::pair<double, double>()>;
std::vector<float> integrate_cufft_com(const DeviceComField& field, const PaddedField& f,
                                       const std::function<void(const ReferenceGetter&)>& host_side);

// Padded index q of an axis -> source index, and the sign the component normal to that axis takes there: 1 inside,
// -1 inside a mirror copy (half-sample reflection), 0 in zero padding. Mirror reflections stay inside the source
// since the mirror padding is at most n on each side.
QGPU_HD inline std::size_t padded_source(std::size_t q, std::size_t before, std::size_t n, bool mirror, int& sign) {
  const long long i = static_cast<long long>(q) - static_cast<long long>(before);
  const long long nn = static_cast<long long>(n);
  if (i >= 0 && i < nn) {
    sign = 1;
    return static_cast<std::size_t>(i);
  }
  if (!mirror) {
    sign = 0;
    return 0;
  }
  sign = -1;
  return static_cast<std::size_t>(i < 0 ? -i - 1 : 2 * nn - 1 - i);
}

// The extended components at padded (q, p): zero padding gives 0 if either index is outside the source; the mirror
// extension flips each component with its own axis' mirror (the gradient of the mirrored potential).
QGPU_HD inline void padded_value(const float* grad_row, const float* grad_col, std::size_t rows, std::size_t cols,
                                 std::size_t pad_row, std::size_t pad_col, bool mirror, std::size_t q, std::size_t p,
                                 float& out_row, float& out_col) {
  int sign_r, sign_c;
  const std::size_t r = padded_source(q, pad_row, rows, mirror, sign_r);
  const std::size_t c = padded_source(p, pad_col, cols, mirror, sign_c);
  if (sign_r == 0 || sign_c == 0) {
    out_row = 0.0f;
    out_col = 0.0f;
    return;
  }
  const float gr = grad_row[r * cols + c], gc = grad_col[r * cols + c];
  out_row = sign_r < 0 ? -gr : gr;
  out_col = sign_c < 0 ? -gc : gc;
}

using qgpu::signed_frequency;  // core/numbers.hpp: numpy.fft.fftfreq numerator

// One coefficient of the half spectrum (row i in [0, nr), col j in [0, nc/2]):
// out = scale * (kr F[G_row] + kc F[G_col]) / (2 pi i k^2), with the Nyquist odd terms zeroed and k = 0 -> 0.
template <class R>
QGPU_HD inline void idpc_coefficient(std::size_t i, std::size_t j, std::size_t nr, std::size_t nc, R step_row,
                                     R step_col, R scale, R fr_re, R fr_im, R fc_re, R fc_im, R& out_re,
                                     R& out_im) {
  if (i == 0 && j == 0) {
    out_re = R(0);
    out_im = R(0);
    return;
  }
  const R kr = R(signed_frequency(i, nr)) / (R(nr) * step_row);
  const R kc = R(signed_frequency(j, nc)) / (R(nc) * step_col);
  const R k2 = kr * kr + kc * kc;
  const R kr_num = (nr % 2 == 0 && i == nr / 2) ? R(0) : kr;
  const R kc_num = (nc % 2 == 0 && j == nc / 2) ? R(0) : kc;
  const R num_re = kr_num * fr_re + kc_num * fc_re;
  const R num_im = kr_num * fr_im + kc_num * fc_im;
  // num / (2 pi i k2) = -i num / (2 pi k2): (re, im) -> (im, -re)
  const R d = scale / (R(6.283185307179586476925) * k2);  // 2 pi
  out_re = num_im * d;
  out_im = -num_re * d;
}

}  // namespace qgpu::dpc::detail
