// Host reference of the parallax engine: FFTW complex128 transforms over the scan, double arithmetic.
#include <fftw3.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <mutex>

#include "core/numbers.hpp"
#include "core/error.hpp"
#include "core/fftw_planner.hpp"
#include "detector/cpu/pixel_group_sums.hpp"
#include "parallax/parallax.hpp"
#include "parallax/parallax_backend.hpp"

namespace qgpu::parallax::detail {

namespace {


// the signed frequency with an even size's Nyquist bin counted positive (core/numbers.hpp)
long signed_index(std::size_t i, std::size_t n) { return long(signed_frequency(i, n, true)); }

class CpuEngine final : public Engine {
 public:
  CpuEngine(const Dataset& ds, const Plan& plan)
      : plan_(plan), n_(plan.scan_size()), v_(plan.groups() * n_), buf_(n_), spec_ref_(n_) {
    const std::size_t groups = plan_.groups();
    std::vector<double> sums(groups * n_, 0.0);
    detector::cpu::pixel_group_sums(ds, plan_.offsets, plan_.pixels,
                                    [&](std::size_t g, std::size_t s, double sum) { sums[g * n_ + s] = sum; });
    for (std::size_t g = 0; g < groups; ++g) {
      double mean = 0;
      for (std::size_t s = 0; s < n_; ++s) mean += sums[g * n_ + s];
      mean /= double(n_);
      if (!(mean > 0)) throw InvalidArgument("parallax: a BF-disk pixel group holds no counts");
      for (std::size_t s = 0; s < n_; ++s) v_[g * n_ + s] = float(sums[g * n_ + s] / mean - 1.0);
    }
    std::lock_guard<std::mutex> lock(fftw_planner_mutex());
    fwd_.p = fftw_plan_dft_2d(int(plan_.scan_rows), int(plan_.scan_cols), buf_.p, buf_.p, FFTW_FORWARD, FFTW_ESTIMATE);
    inv_.p = fftw_plan_dft_2d(int(plan_.scan_rows), int(plan_.scan_cols), buf_.p, buf_.p, FFTW_BACKWARD, FFTW_ESTIMATE);
    if (!fwd_.p || !inv_.p) throw Error("FFTW: cannot plan the parallax transforms");
    if (!plan_.window.empty()) {
      for (std::size_t s = 0; s < n_; ++s) buf_.c()[s] = double(plan_.window[s]);
      fftw_execute(fwd_.p);
      wspec_.assign(buf_.c(), buf_.c() + n_);
      for (std::size_t q = 0; q < n_; ++q)
        if (nyquist(q)) wspec_[q] = 0.0;
    }
  }

  std::vector<float> mean_image() override {
    std::vector<double> acc(n_, 0.0);
    for (std::size_t g = 0; g < plan_.groups(); ++g)
      for (std::size_t s = 0; s < n_; ++s) acc[s] += v_[g * n_ + s];
    std::vector<float> out(n_);
    for (std::size_t s = 0; s < n_; ++s) out[s] = float(acc[s] / double(plan_.groups()));
    return out;
  }

  void set_reference(const std::vector<Shift>& sh, const std::vector<float>& weight) override {
    ref_shift_ = sh;
    ref_weight_ = weight;
    ref_wsum_ = 0;
    std::fill(spec_ref_.begin(), spec_ref_.end(), std::complex<double>(0.0));
    if (sb_.on) {
      tm_.assign(n_, 0.0);
      tp_.assign(n_, 0.0);
      nd_.assign(n_, 0.0);
      nm_.assign(n_, 0.0);
      np_.assign(n_, 0.0);
    }
    std::vector<std::complex<double>> ramps(wspec_.empty() ? 0 : n_, 0.0);  // sum_g w_g exp(+2 pi i Q.s_g)
    for (std::size_t g = 0; g < plan_.groups(); ++g) {
      if (weight[g] == 0) continue;
      const double w = double(weight[g]);
      ref_wsum_ += w;
      load(g);
      fftw_execute(fwd_.p);
      for (std::size_t q = 0; q < n_; ++q) {
        if (nyquist(q)) continue;
        const std::complex<double> e = ramp(q, sh[g]), v = w * buf_.c()[q] * e;
        spec_ref_[q] += v;
        if (!ramps.empty()) ramps[q] += w * e;
        if (!sb_.on) continue;
        const int cls = sideband_class_of(g, q);
        if (cls & 1) tm_[q] += v;
        if (cls & 2) tp_[q] += v;
        if (cls == 3) nd_[q] += w;
        if (cls == 1) nm_[q] += w;
        if (cls == 2) np_[q] += w;
      }
    }
    if (wspec_.empty()) return;
    // the reference's window image IFFT(RW) and the envelope IFFT(W conj(RW)), see parallax_backend.hpp
    wref_.assign(n_, 0.0);
    env_.assign(n_, 0.0);
    for (std::size_t q = 0; q < n_; ++q) buf_.c()[q] = wspec_[q] * ramps[q];
    fftw_execute(inv_.p);
    for (std::size_t s = 0; s < n_; ++s) wref_[s] = buf_.c()[s].real();
    for (std::size_t q = 0; q < n_; ++q) buf_.c()[q] = wspec_[q] * std::conj(wspec_[q] * ramps[q]);
    fftw_execute(inv_.p);
    double top = 0;
    for (std::size_t s = 0; s < n_; ++s) top = std::max(top, env_[s] = buf_.c()[s].real());
    for (double& e : env_) e = std::max(e, kWindowFloor * top);
  }

  std::vector<float> reference_image() override {
    for (std::size_t q = 0; q < n_; ++q) buf_.c()[q] = spec_ref_[q];
    fftw_execute(inv_.p);
    std::vector<float> out(n_);
    if (!wspec_.empty()) {
      const double top = *std::max_element(wref_.begin(), wref_.end());
      for (std::size_t s = 0; s < n_; ++s)
        out[s] = wref_[s] > kWindowFloor * top ? float(buf_.c()[s].real() / wref_[s]) : 0.0f;
      return out;
    }
    const double scale = ref_wsum_ > 0 ? 1.0 / (double(n_) * ref_wsum_) : 0.0;
    for (std::size_t s = 0; s < n_; ++s) out[s] = float(buf_.c()[s].real() * scale);
    return out;
  }

  std::vector<Shift> correlate(const std::vector<Shift>& predicted, std::size_t w, std::vector<float>* windows) override {
    const long nr = long(plan_.scan_rows), nc = long(plan_.scan_cols), hw = long(w), side = 2 * hw + 1;
    std::vector<Shift> out(plan_.groups());
    if (windows) windows->assign(plan_.groups() * std::size_t(side * side), 0.0f);
    for (std::size_t g = 0; g < plan_.groups(); ++g) {
      load(g);
      fftw_execute(fwd_.p);
      const double wg = ref_weight_.empty() ? 0.0 : double(ref_weight_[g]);
      for (std::size_t q = 0; q < n_; ++q) {
        const std::complex<double> v = buf_.c()[q];
        if (nyquist(q)) {
          buf_.c()[q] = 0.0;
          continue;
        }
        const std::complex<double> own = wg * v * ramp(q, ref_shift_[g]);
        if (!sb_.on) {
          buf_.c()[q] = v * std::conj(spec_ref_[q] - own);
          continue;
        }
        // the group's class model from the others (leave one out), see sideband_model
        const int cls = sideband_class_of(g, q);
        const std::complex<double> tm = tm_[q] - ((cls & 1) ? own : 0.0), tp = tp_[q] - ((cls & 2) ? own : 0.0);
        const double nd = nd_[q] - (cls == 3 ? wg : 0.0), nm = nm_[q] - (cls == 1 ? wg : 0.0),
                     np = np_[q] - (cls == 2 ? wg : 0.0);
        double re = 0, im = 0;
        sideband_model(cls, tm.real(), tm.imag(), tp.real(), tp.imag(), nd, nm, np, re, im);
        buf_.c()[q] = v * std::conj(std::complex<double>(re, im));
      }
      for (std::size_t q = 0; q < n_; ++q)
        buf_.c()[q] *= smoothing_factor(double(signed_index(q / std::size_t(nc), std::size_t(nr))),
                                        double(signed_index(q % std::size_t(nc), std::size_t(nc))), double(nr), double(nc));
      fftw_execute(inv_.p);
      auto at = [&](long r, long c) {
        const std::size_t i = std::size_t(wrap_index(r, nr) * nc + wrap_index(c, nc));
        return env_.empty() ? buf_.c()[i].real() : buf_.c()[i].real() / env_[i];
      };
      const long pr = std::lround(predicted[g].row), pc = std::lround(predicted[g].col);
      if (windows)
        for (long k = 0; k < side * side; ++k)
          (*windows)[g * std::size_t(side * side) + std::size_t(k)] = float(at(pr - hw + k / side, pc - hw + k % side));
      long br = pr - hw, bc = pc - hw;
      for (long r = pr - hw; r <= pr + hw; ++r)
        for (long c = pc - hw; c <= pc + hw; ++c)
          if (at(r, c) > at(br, bc)) br = r, bc = c;
      const double dr = parabola_vertex(at(br - 1, bc), at(br, bc), at(br + 1, bc));
      const double dc = parabola_vertex(at(br, bc - 1), at(br, bc), at(br, bc + 1));
      out[g] = {double(br) + dr, double(bc) + dc};
    }
    return out;
  }

  std::vector<float> upsampled_sum(const std::vector<Shift>& sh, std::size_t up) override {
    const std::size_t nr = plan_.scan_rows, nc = plan_.scan_cols, ur = nr * up, uc = nc * up;
    std::vector<double> val(ur * uc, 0.0), wt(ur * uc, 0.0);
    for (std::size_t g = 0; g < plan_.groups(); ++g) {
      const float* v = v_.data() + g * n_;
      for (std::size_t r = 0; r < nr; ++r)
        for (std::size_t c = 0; c < nc; ++c) {
          const double y = (double(r) - sh[g].row) * double(up), x = (double(c) - sh[g].col) * double(up);
          const double fy = std::floor(y), fx = std::floor(x), wy = y - fy, wx = x - fx;
          const long y0 = long(fy), x0 = long(fx);
          const double value = v[r * nc + c];
          for (int a = 0; a < 2; ++a)
            for (int b = 0; b < 2; ++b) {
              const long yy = y0 + a, xx = x0 + b;
              if (yy < 0 || xx < 0 || yy >= long(ur) || xx >= long(uc)) continue;
              const double w = (a ? wy : 1 - wy) * (b ? wx : 1 - wx);
              val[std::size_t(yy) * uc + std::size_t(xx)] += w * value;
              wt[std::size_t(yy) * uc + std::size_t(xx)] += w;
            }
        }
    }
    double mean_w = 0;
    for (double w : wt) mean_w += w;
    mean_w /= double(wt.size());
    const double floor = kWeightFloor * mean_w;
    std::vector<float> out(ur * uc);
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = wt[i] > floor ? float(val[i] / wt[i]) : 0.0f;
    return out;
  }

  nlohmann::json describe() const override {
    return {{"fft", "FFTW complex128, full spectrum"}, {"precision", "virtual images float32, transforms float64"},
            {"virtual_image_bytes", v_.size() * sizeof(float)}};
  }

 private:
  void set_sideband(const Sideband& sb) override { sb_ = sb; }

  int sideband_class_of(std::size_t g, std::size_t q) const {
    const std::size_t nr = plan_.scan_rows, nc = plan_.scan_cols;
    return sideband_class(sb_.k[g].row, sb_.k[g].col, double(signed_index(q / nc, nr)) * sb_.q_row,
                          double(signed_index(q % nc, nc)) * sb_.q_col, sb_.k_aperture);
  }

  bool nyquist(std::size_t q) const {
    const std::size_t nr = plan_.scan_rows, nc = plan_.scan_cols, i = q / nc, j = q % nc;
    return (nr % 2 == 0 && i == nr / 2) || (nc % 2 == 0 && j == nc / 2);
  }
  // exp(+2 pi i Q.s) at flat frequency index q
  std::complex<double> ramp(std::size_t q, const Shift& s) const {
    const std::size_t nr = plan_.scan_rows, nc = plan_.scan_cols;
    const double ph = 2 * kPi * (double(signed_index(q / nc, nr)) * s.row / double(nr) +
                                 double(signed_index(q % nc, nc)) * s.col / double(nc));
    return {std::cos(ph), std::sin(ph)};
  }

  void load(std::size_t g) {
    const float* v = v_.data() + g * n_;
    if (plan_.window.empty())
      for (std::size_t s = 0; s < n_; ++s) buf_.c()[s] = double(v[s]);
    else
      for (std::size_t s = 0; s < n_; ++s) buf_.c()[s] = double(v[s]) * double(plan_.window[s]);
  }

  const Plan& plan_;
  std::size_t n_;
  std::vector<float> v_;  // [group][scan]
  FftwComplex buf_;
  std::vector<std::complex<double>> spec_ref_;  // R(Q), see set_reference
  std::vector<std::complex<double>> tm_, tp_;   // sideband class sums T_M, T_P (sideband on)
  std::vector<double> nd_, nm_, np_;            // and their weights N_D, N_M, N_P
  std::vector<std::complex<double>> wspec_;     // W(Q) of the plan's window (empty: none)
  std::vector<double> wref_, env_;              // IFFT(RW) and the floored envelope, see set_reference
  std::vector<Shift> ref_shift_;
  std::vector<float> ref_weight_;
  double ref_wsum_ = 0;
  Sideband sb_;
  FftwPlan fwd_, inv_;
};

}  // namespace

std::unique_ptr<Engine> make_cpu_engine(const Dataset& ds, const Plan& plan) {
  return std::make_unique<CpuEngine>(ds, plan);
}

}  // namespace qgpu::parallax::detail
