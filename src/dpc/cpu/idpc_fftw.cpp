// Host reference of the Fourier integration: the padded field built on the host, FFTW in double precision.
#include <fftw3.h>

#include <mutex>

#include "core/error.hpp"
#include "core/fftw_planner.hpp"
#include "core/stage_timing.hpp"
#include "dpc/idpc_backend.hpp"

namespace qgpu::dpc::detail {

std::vector<float> integrate_fftw(const PaddedField& f) {
  const std::size_t nr = f.padded_rows, nc = f.padded_cols, nch = nc / 2 + 1, n = nr * nc;
  const timing::Stage stage("compute");
  FftwReal real(n), real_col(n);
  FftwComplex spec_row(nr * nch), spec_col(nr * nch);
  FftwPlan forward, inverse;
  {
    std::lock_guard<std::mutex> lock(fftw_planner_mutex());
    forward.p = fftw_plan_dft_r2c_2d(int(nr), int(nc), real.p, spec_row.p, FFTW_ESTIMATE);
    inverse.p = fftw_plan_dft_c2r_2d(int(nr), int(nc), spec_row.p, real.p, FFTW_ESTIMATE);
  }
  if (!forward.p || !inverse.p) throw Error("FFTW: cannot plan a " + std::to_string(nr) + "x" + std::to_string(nc) + " transform");

  for (std::size_t q = 0; q < nr; ++q)
    for (std::size_t p = 0; p < nc; ++p) {
      float gr, gc;
      padded_value(f.grad_row, f.grad_col, f.rows, f.cols, f.pad_row, f.pad_col, f.mirror, q, p, gr, gc);
      real.p[q * nc + p] = gr;
      real_col.p[q * nc + p] = gc;
    }
  fftw_execute_dft_r2c(forward.p, real.p, spec_row.p);
  fftw_execute_dft_r2c(forward.p, real_col.p, spec_col.p);

  const double scale = 1.0 / double(n);
  for (std::size_t i = 0; i < nr; ++i)
    for (std::size_t j = 0; j < nch; ++j) {
      const std::size_t k = i * nch + j;
      double re, im;
      idpc_coefficient<double>(i, j, nr, nc, f.step_row, f.step_col, scale, spec_row.p[k][0], spec_row.p[k][1],
                               spec_col.p[k][0], spec_col.p[k][1], re, im);
      spec_row.p[k][0] = re;
      spec_row.p[k][1] = im;
    }
  fftw_execute_dft_c2r(inverse.p, spec_row.p, real.p);  // destroys spec_row, as c2r may

  std::vector<float> phi(f.rows * f.cols);
  for (std::size_t r = 0; r < f.rows; ++r)
    for (std::size_t c = 0; c < f.cols; ++c)
      phi[r * f.cols + c] = static_cast<float>(real.p[(r + f.pad_row) * nc + c + f.pad_col]);
  return phi;
}

}  // namespace qgpu::dpc::detail
