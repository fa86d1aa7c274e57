#pragma once
// Internal: the Fourier integration of an already padded (periodic) gradient field, per backend, and the
// k-space filter both share.
#include <cstddef>
#include <vector>

#include "core/hd.hpp"

namespace qgpu::dpc::detail {

struct PeriodicField {
  std::size_t rows = 0, cols = 0;
  std::vector<float> grad_row, grad_col;  // rows * cols each
  double step_row = 1, step_col = 1;
};

// rows * cols potential (zero mean). FFTW double / cuFFT complex64.
std::vector<float> integrate_fftw(const PeriodicField& f);
std::vector<float> integrate_cufft(const PeriodicField& f);

// numpy.fft.fftfreq numerator: index i of an n-point transform -> signed frequency index.
QGPU_HD inline long long signed_frequency(std::size_t i, std::size_t n) {
  return i <= (n - 1) / 2 ? static_cast<long long>(i) : static_cast<long long>(i) - static_cast<long long>(n);
}

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
