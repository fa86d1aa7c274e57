// Host reference of SSB: G(K, Q) by FFTW in complex128 over the full scan spectrum, double arithmetic throughout.
#include <fftw3.h>

#include <cmath>
#include <complex>
#include <mutex>
#include <string>

#include "core/error.hpp"
#include "core/fftw_planner.hpp"
#include "detector/cpu/pixel_group_sums.hpp"
#include "ssb/ssb_backend.hpp"
#include "ssb/ssb_math.hpp"
#include "ssb/ssb_weighting.hpp"

namespace qgpu::ssb::detail {

namespace {

class CpuEngine final : public Engine {
 public:
  CpuEngine(const Dataset& ds, const Plan& plan) : plan_(plan), n_(plan.scan_size()), g_(plan.groups() * n_) {
    // Gather: per group, the summed counts of its pixels at every scan position, [group][scan].
    const std::size_t groups = plan_.groups();
    detector::cpu::pixel_group_sums(ds, plan_.offsets, plan_.pixels,
                                    [&](std::size_t g, std::size_t s, double sum) { g_.c()[g * n_ + s] = sum; });
    // Forward FFT over the scan of every group, in place (FFTW_FORWARD: exp(-2 pi i Q.R)).
    FftwPlan fwd;
    {
      std::lock_guard<std::mutex> lock(fftw_planner_mutex());
      const int dims[2] = {int(plan_.scan_rows), int(plan_.scan_cols)};
      fwd.p = fftw_plan_many_dft(2, dims, int(groups), g_.p, nullptr, 1, int(n_), g_.p, nullptr, 1, int(n_),
                                 FFTW_FORWARD, FFTW_ESTIMATE);
    }
    if (!fwd.p) throw Error("FFTW: cannot plan the scan transforms");
    fftw_execute(fwd.p);
    double dc = 0;
    for (std::size_t g = 0; g < groups; ++g) dc += g_.c()[g * n_].real();
    i0_ = dc / (double(n_) * plan_.total_weight());
    if (!(i0_ > 0)) throw InvalidArgument("ssb: the BF disk holds no counts");
  }

  ObjectImages reconstruct(const Aberrations& ab, Weighting w, std::size_t b) override {
    const std::size_t nr = plan_.scan_rows, nc = plan_.scan_cols, br = nr / b, bc = nc / b, m = br * bc;
    std::vector<double> full_den;
    FftwComplex full_num(n_);
    sums(ab, full_num.c(), full_den, w == Weighting::phase);
    // The binned grid's frequencies (b = 1: every one, in place): num / den there, its own dropped Q set to 0.
    std::vector<std::size_t> at(m);
    for (std::size_t i = 0; i < br; ++i)
      for (std::size_t j = 0; j < bc; ++j) at[i * bc + j] = full_grid_index(i, br, nr) * nc + full_grid_index(j, bc, nc);
    FftwComplex psi(m);
    std::vector<double> den(m);
    for (std::size_t i = 0; i < br; ++i)
      for (std::size_t j = 0; j < bc; ++j) {
        const std::size_t q = i * bc + j;
        const bool dropped = dropped_frequency(i, j, br, bc);
        psi.c()[q] = dropped ? 0.0 : full_num.c()[at[q]];
        den[q] = dropped ? 0.0 : full_den[at[q]];
      }
    const double i0n = i0_ * double(n_), scale = 1.0 / i0n;
    if (w == Weighting::amplitude) {
      const double floor = weight_floor(plan_);
      for (std::size_t q = 0; q < m; ++q) psi.c()[q] *= scale / std::max(den[q], floor);
    } else if (w == Weighting::phase) {
      const double f = scale / plan_.total_weight();
      for (std::size_t q = 0; q < m; ++q) psi.c()[q] *= f;
    } else {
      std::size_t ring_count = 0;
      const std::vector<std::int32_t> full_rings = wiener_rings(plan_, false, ring_count);
      std::vector<std::int32_t> rings(m);
      for (std::size_t q = 0; q < m; ++q) rings[q] = full_rings[at[q]];
      const std::vector<double> s = wiener_ring_power(rings, ring_count, psi.c(), den.data(), nullptr, m, i0n);
      for (std::size_t q = 0; q < m; ++q) {
        const double sr = s[rings[q]];
        psi.c()[q] *= (sr > 0 && den[q] > 0) ? scale / (den[q] + 1.0 / (i0n * sr)) : 0.0;
      }
    }
    FftwPlan inv;
    {
      std::lock_guard<std::mutex> lock(fftw_planner_mutex());
      inv.p = fftw_plan_dft_2d(int(br), int(bc), psi.p, psi.p, FFTW_BACKWARD, FFTW_ESTIMATE);
    }
    if (!inv.p) throw Error("FFTW: cannot plan the inverse transform");
    fftw_execute(inv.p);  // unnormalised: sum_Q Psi e^{+2 pi i Q.R}, R on the binned grid
    ObjectImages out;
    out.phase.resize(m);
    out.amplitude.resize(m);
    for (std::size_t s = 0; s < m; ++s) {
      const std::complex<double> o = 1.0 + psi.c()[s];
      out.phase[s] = float(std::arg(o));
      out.amplitude[s] = float(std::abs(o));
    }
    return out;
  }

  double loss(const Aberrations& ab) override {
    std::vector<std::complex<double>> num(n_);
    std::vector<double> den;
    sums(ab, num.data(), den);
    double var = 0;
    for (std::size_t q = 0; q < n_; ++q)
      if (den[q] > 0) var += std::norm(num[q]) / den[q];
    return -var / ((i0_ * double(n_)) * (i0_ * double(n_)));
  }

  nlohmann::json describe() const override {
    return {{"fft", "FFTW complex128, full scan spectrum"},
            {"precision", "float64"},
            {"g_cube_bytes", g_bytes()},
            {"groups", plan_.groups()}};
  }

 private:
  std::size_t g_bytes() const { return plan_.groups() * n_ * sizeof(std::complex<double>); }

  // num[q] = sum_K G(K, q) conj(Gamma), den[q] = sum_K w |Gamma|^2 over the full spectrum; dropped Q get 0.
  // unit_gamma: num with conj(Gamma) / |Gamma| (phase weighting), den stays 0.
  void sums(const Aberrations& ab, std::complex<double>* num, std::vector<double>& den, bool unit_gamma = false) const {
    const ChiCoeffs<double> c = chi_coeffs<double>(ab, plan_.lambda);
    const std::size_t nr = plan_.scan_rows, nc = plan_.scan_cols;
    std::vector<double> qy(nr), qx(nc);
    for (std::size_t i = 0; i < nr; ++i) qy[i] = plan_.qy(i);
    for (std::size_t j = 0; j < nc; ++j) qx[j] = plan_.qx(j);
    std::vector<double> nre(n_, 0.0), nim(n_, 0.0);
    den.assign(n_, 0.0);
    const double q2max = 4 * plan_.kmax2;  // |Q| > 2 kmax: no overlap
    for (std::size_t g = 0; g < plan_.groups(); ++g) {
      const double ky = plan_.ky[g], kx = plan_.kx[g], w = plan_.weight[g];
      const double chi_k = chi<double>(ky, kx, c);
      const std::complex<double>* row = g_.c() + g * n_;
      for (std::size_t i = 0; i < nr; ++i)
        for (std::size_t j = 0; j < nc; ++j) {
          if (dropped_frequency(i, j, nr, nc) || qy[i] * qy[i] + qx[j] * qx[j] > q2max) continue;
          const std::size_t q = i * nc + j;
          accumulate<double>(ky, kx, chi_k, w, qy[i], qx[j], plan_.kmax2, c, row[q].real(), row[q].imag(), nre[q],
                             nim[q], den[q], unit_gamma);
        }
    }
    for (std::size_t q = 0; q < n_; ++q) num[q] = {nre[q], nim[q]};
  }

  Plan plan_;
  std::size_t n_;
  FftwComplex g_;  // [group][scan frequency], full spectrum
};

}  // namespace

std::unique_ptr<Engine> make_cpu_engine(const Dataset& ds, const Plan& plan) {
  return std::make_unique<CpuEngine>(ds, plan);
}

}  // namespace qgpu::ssb::detail
