#pragma once
// Internal: the BF-disk groups of a parallax run and the backend engines holding their virtual images.
#include <cstddef>
#include <cmath>
#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/numbers.hpp"
#include "core/hd.hpp"
#include "resident/dataset.hpp"

namespace qgpu::parallax::detail {

struct Plan {
  std::size_t scan_rows = 0, scan_cols = 0;
  std::vector<std::uint32_t> offsets;  // groups + 1 entries into pixels (CSR)
  std::vector<std::uint32_t> pixels;   // flat detector pixel indices (row * det_cols + col)
  std::vector<double> det_row, det_col;  // group centroid offset from the disk centre, detector pixels
  // Apodisation W (scan_rows * scan_cols, row-major; empty: none), see Engine: every v_g is multiplied by W before
  // its spectrum is taken for the reference and the correlations (the scan is not periodic: a circular correlation
  // of images shifted by up to a third of the field wraps their edges onto each other and pulls the peaks towards 0).
  std::vector<float> window;
  std::size_t groups() const { return det_row.size(); }
  std::size_t scan_size() const { return scan_rows * scan_cols; }
};

struct Shift {
  double row = 0, col = 0;  // scan pixels: v_g(R) = ref(R - shift)
};

// The sideband model (see sideband_model): every group's tilt K_g in the scan frame (1/A), the aperture radius (1/A)
// and the scan frequency steps 1 / (n step) (1/A). (a_rr, a_rc, a_cc: the aberration phase chi(Q) = a_rr Q_r^2 +
// 2 a_rc Q_r Q_c + a_cc Q_c^2, A^2, recorded; the model does not need it.)
struct Sideband {
  bool on = false;
  std::vector<Shift> k;  // per group, (row, col), 1/A
  double k_aperture = 0, a_rr = 0, a_rc = 0, a_cc = 0, q_row = 0, q_col = 0;
};

// The sideband model (issue 31). With T the object's transmission and O(Q) its spectrum (any object: weak or strong
// phase, amplitude), the component at Q of the BF image at tilt K (aperture A: 0 or 1, chi the aberration function)
// is, to first order in the scattered beams (the dark-dark interference neglected),
//   exp(2 pi i lambda K.S Q) [A(K - Q) exp(-i alpha) O(Q) + A(K + Q) exp(+i alpha) conj(O(-Q))],  alpha = chi(Q)
// (S the symmetric aberration matrix of C1 and A1, parallax.hpp): apart from the shift, every group sees at Q one of
// three things, X(Q) = exp(-i alpha) O(Q) (class minus: only K - Q inside the aperture), Y(Q) = exp(+i alpha)
// conj(O(-Q)) (plus: only K + Q inside) or X + Y (both: double sideband, DSB), or nothing. A common reference
// (the plain sum of the aligned images) mixes them, and the correlation of a single-sideband (SSB) group with it is
// not symmetric about the group's shift: the peaks of off-centre groups are pulled, C1 came out 2-4 % off (towards
// the disc centre without a correction; a fixed SSB phase factor for a weak phase object left a bias that grows
// with the phase: +1.1 % at 0.25 rad per atom, -0.2 % at 0.05 rad, issue 31). Instead the reference of group g at Q
// is its own class's least-squares estimate from the other groups' aligned spectra: with N_c(Q) the summed weights
// of the groups of class c at Q and T_M = sum over DSB and minus groups, T_P = sum over DSB and plus groups of
// w_g V_g(Q) exp(+2 pi i Q.s_g), the normal equations of min sum |V - model|^2 give
//   X = (n_p T_M - N_D T_P) / det,  Y = (n_m T_P - N_D T_M) / det,
//   n_m = N_D + N_M + eps, n_p = N_D + N_P + eps, det = n_m n_p - N_D^2  (eps = kSidebandEps (N_D + N_M + N_P))
// (the aberration phase cancels: every group of a class sees the same exp(-+ i alpha) at Q), and the model of group
// g is X, Y or X + Y by its class, its own term taken out of T_M, T_P (leave one out). Only the classes are needed:
// the tilt K_g of every group (scan frame, from the current linear fit) and the aperture radius.
inline constexpr double kSidebandEps = 1e-3;

// Class of group tilt (kr, kc) at frequency (qr, qc), 1/A: bit 1 = K - Q inside the aperture (minus), bit 2 = K + Q
// inside (plus); 3 = DSB, 0 = no partner beam (no signal at Q).
QGPU_HD inline int sideband_class(double kr, double kc, double qr, double qc, double k_ap) {
  const double k2 = k_ap * k_ap;
  const bool minus = (kr - qr) * (kr - qr) + (kc - qc) * (kc - qc) <= k2;
  const bool plus = (kr + qr) * (kr + qr) + (kc + qc) * (kc + qc) <= k2;
  return (minus ? 1 : 0) | (plus ? 2 : 0);
}

// The model of a group of class cls from the class sums at Q (see above): tm, tp = T_M, T_P (re, im) with the
// group's own term already removed, nd, nm, np = N_D, N_M, N_P.
QGPU_HD inline void sideband_model(int cls, double tm_re, double tm_im, double tp_re, double tp_im, double nd, double nm,
                                   double np, double& re, double& im) {
  re = im = 0;
  if (cls == 0) return;
  const double eps = kSidebandEps * (nd + nm + np) + 1e-30;
  const double n_m = nd + nm + eps, n_p = nd + np + eps, det = n_m * n_p - nd * nd;
  if (!(det > 0)) return;
  if (cls & 1) re += (n_p * tm_re - nd * tp_re) / det, im += (n_p * tm_im - nd * tp_im) / det;  // X
  if (cls & 2) re += (n_m * tp_re - nd * tm_re) / det, im += (n_m * tp_im - nd * tm_im) / det;  // Y
}

// The virtual images v_g = I_g / mean(I_g) - 1 of every group, gathered at construction.
class Engine {
 public:
  virtual ~Engine() = default;
  // Mean of the v_g (the BF contrast image), scan_rows * scan_cols.
  virtual std::vector<float> mean_image() = 0;
  // Sets the reference spectrum R(Q) = sum_g w_g V_g(Q) exp(+2 pi i Q.s_g) (the images shifted back by s_g and
  // summed with weights w_g = weight[g]; the Nyquist row/column of even sizes = 0). V_g is the spectrum of W v_g
  // with the plan's window W. With a window the reference's window RW(Q) = sum_g w_g W(Q) exp(+2 pi i Q.s_g) is
  // made too, and from it the correlation envelope E(t) = IFFT(W conj(RW)) (the correlation the windows alone
  // give at lag t; all groups, the leave-one-out term of a single group is left in: a smooth 1 / groups part).
  virtual void set_reference(const std::vector<Shift>& s, const std::vector<float>& weight) = 0;
  // The sideband model used by the next set_reference and correlate (off: the plain reference R above; on: the
  // class sums of sideband_model, and every group correlated with its own class's model).
  virtual void set_sideband(const Sideband& sb) = 0;
  // The reference as an image: IFFT(R) / (N sum_g w_g), scan_rows * scan_cols; with a window IFFT(R) / IFFT(RW)
  // (the windows' weighted mean divided out; 0 where IFFT(RW) < kWindowFloor times its maximum).
  virtual std::vector<float> reference_image() = 0;
  // Peak of the circular cross-correlation of every v_g with the reference without v_g's own term (leave one out:
  // V_g conj(R - w_g V_g exp(+2 pi i Q.s_g)); otherwise the image's own noise correlates at its reference shift and
  // pulls the peak there at low dose), searched in the (2 w + 1)^2 window around round(predicted[g]) (w = window
  // half-width, scan pixels), sub-pixel by a 3-point parabola per axis. Ties: the first in window raster order.
  // With a window every correlation value at lag t is divided by the envelope E(t) (floored at kWindowFloor times
  // its maximum) before the search: the normalised correlation, whose peak the windows' own correlation (largest
  // at lag 0) does not pull towards 0. Every correlation is smoothed first (kCorrelationSmoothPx).
  // windows (if not null) receives every group's correlation values on that window, [group][(2 w + 1)^2] in raster
  // order from (round(predicted) - w): the front end's joint fit of the linear model (see parallax.cpp) reads them.
  virtual std::vector<Shift> correlate(const std::vector<Shift>& predicted, std::size_t w,
                                       std::vector<float>* windows = nullptr) = 0;
  std::vector<float> aligned_mean(const std::vector<Shift>& s, const std::vector<float>& weight) {
    set_reference(s, weight);
    return reference_image();
  }
  // Kernel-density shift-and-sum on the upsampled grid (see parallax.hpp), (rows*up) * (cols*up).
  virtual std::vector<float> upsampled_sum(const std::vector<Shift>& s, std::size_t up) = 0;
  virtual nlohmann::json describe() const = 0;
};

std::unique_ptr<Engine> make_cpu_engine(const Dataset& ds, const Plan& plan);
std::unique_ptr<Engine> make_cuda_engine(const Dataset& ds, const Plan& plan);

inline constexpr double kWindowFloor = 0.05;
// The window's taper: sin^2 over this fraction of the half side at each edge (a quarter of the half side: 6 of 48
// scan pixels), 1 inside. Measured on the science table (docs/benchmarks.md, 48 x 48 scans, 5000 counts per frame):
// 1.0 (a full Hann window) left too little signal, the staged search lost the -200 A, 300 kV case; 0.5 left the
// 80 kV, +120 A fit at confidence 0.54 (undetermined); 0.25 kept every fit within 1.4 % in C1, confidence >= 0.71.
inline constexpr double kWindowTaper = 0.25;
// Every correlation is smoothed by a Gaussian of this sigma (scan pixels; its spectrum multiplies the cross
// spectrum) before the peak search and the joint fit: at 300 kV an atom's correlation peak is about a pixel wide,
// too sharp for the 3-point parabola and the cubic interpolation of the joint fit (issue 31: 0.7 px brought the
// 5000-count fits of the science table within 1.6 %; 1.2 px starts to bias them).
inline constexpr double kCorrelationSmoothPx = 0.7;

// The apodisation of the plan (both backends): separable, W(r, c) = h_r(r) h_c(c), h(i) = sin^2(pi x / 2) with
// x = min(i + 1/2, n - i - 1/2) / (kWindowTaper n / 2) below 1, else 1.
inline std::vector<float> edge_window(std::size_t rows, std::size_t cols) {
  auto h = [](double i, double n) {
    const double x = std::min(i + 0.5, n - i - 0.5) / (0.5 * n * kWindowTaper);
    if (x >= 1) return 1.0;
    const double s = std::sin(0.5 * kPi * x);
    return s * s;
  };
  std::vector<float> w(rows * cols);
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c = 0; c < cols; ++c) w[r * cols + c] = float(h(double(r), double(rows)) * h(double(c), double(cols)));
  return w;
}

// exp(-2 pi^2 sigma^2 (f_r^2 + f_c^2)) at signed frequency indices (i, j) of an nr x nc grid (cycles per pixel).
QGPU_HD inline double smoothing_factor(double i, double j, double nr, double nc) {
  const double fr = i / nr, fc = j / nc;
  return exp(-2.0 * kPi * kPi * kCorrelationSmoothPx * kCorrelationSmoothPx * (fr * fr + fc * fc));
}

// Shared by the backends: the 3-point parabola vertex offset in [-0.5, 0.5] (0 for a flat or non-peaked triple).
inline long wrap_index(long i, long n) { return ((i % n) + n) % n; }

inline double parabola_vertex(double m, double c, double p) {
  const double d = m - 2 * c + p;
  if (!(d < 0)) return 0;
  const double v = 0.5 * (m - p) / d;
  return v < -0.5 ? -0.5 : (v > 0.5 ? 0.5 : v);
}

}  // namespace qgpu::parallax::detail
