#pragma once
// Internal: the BF-disk groups of a parallax run and the backend engines holding their virtual images.
#include <cstddef>
#include <cmath>
#include <cstdint>
#include <memory>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/hd.hpp"
#include "resident/dataset.hpp"

namespace qgpu::parallax::detail {

struct Plan {
  std::size_t scan_rows = 0, scan_cols = 0;
  std::vector<std::uint32_t> offsets;  // groups + 1 entries into pixels (CSR)
  std::vector<std::uint32_t> pixels;   // flat detector pixel indices (row * det_cols + col)
  std::vector<double> det_row, det_col;  // group centroid offset from the disk centre, detector pixels
  std::size_t groups() const { return det_row.size(); }
  std::size_t scan_size() const { return scan_rows * scan_cols; }
};

struct Shift {
  double row = 0, col = 0;  // scan pixels: v_g(R) = ref(R - shift)
};

// Single-sideband phase correction (see sideband_factor): every group's tilt K_g in the scan frame (1/A), the
// aperture radius (1/A), the defocus phase alpha(Q) = chi(Q) = a_rr Q_r^2 + 2 a_rc Q_r Q_c + a_cc Q_c^2 (A^2: pi lambda
// times the symmetric aberration matrix S of C1 and A1, parallax.hpp) and the scan frequency steps 1 / (n step) (1/A).
struct Sideband {
  bool on = false;
  std::vector<Shift> k;  // per group, (row, col), 1/A
  double k_aperture = 0, a_rr = 0, a_rc = 0, a_cc = 0, q_row = 0, q_col = 0;
};

// The factor that makes a group's spectrum at Q carry the phase of the double-sideband (DSB) transfer. For a weak
// phase object and defocus the component at Q of the image at tilt K is
//   i Phi(Q) exp(2 pi i lambda C1 K.Q) [A(K - Q) exp(-i alpha) - A(K + Q) exp(+i alpha)],  alpha = chi(Q) (pi lambda C1 Q^2
// for pure defocus; with two-fold astigmatism pi lambda Q.S Q: the full quadratic aberration function, issue 31),
// (A the aperture, 0 or 1): DSB (both inside) -2 i sin(alpha), a pure shift of the common image; where only one
// partner beam is inside (single sideband, SSB: pixels off the disc centre at frequencies beyond R - |K|) the phase
// differs from the DSB one by +-(pi / 2 - alpha), which pulls the correlation peak towards the partner beam (the disc
// centre): C1 came out 2-4 % low. The factor is 1 (DSB), 0 (no partner: no signal), -i sgn(sin alpha) exp(+i alpha)
// (only K - Q inside), +i sgn(sin alpha) exp(-i alpha) (only K + Q inside); conjugate-symmetric in Q and unchanged
// under (S, K) -> (-S, -K), so the sign ambiguity of the fit does not matter.
QGPU_HD inline void sideband_factor(double kr, double kc, double qr, double qc, double k_ap, double a_rr, double a_rc,
                                    double a_cc, double& re, double& im) {
  const double k2 = k_ap * k_ap;
  const bool minus = (kr - qr) * (kr - qr) + (kc - qc) * (kc - qc) <= k2;
  const bool plus = (kr + qr) * (kr + qr) + (kc + qc) * (kc + qc) <= k2;
  if (minus == plus) {
    re = minus ? 1.0 : 0.0;
    im = 0.0;
    return;
  }
  const double a = a_rr * qr * qr + 2 * a_rc * qr * qc + a_cc * qc * qc, sn = sin(a), cs = cos(a), sg = sn < 0 ? -1.0 : 1.0;
  // minus: -i sg (cos a + i sin a) = sg (sin a - i cos a); plus: +i sg (cos a - i sin a) = sg (sin a + i cos a)
  re = sg * sn;
  im = minus ? -sg * cs : sg * cs;
}

// The virtual images v_g = I_g / mean(I_g) - 1 of every group, gathered at construction.
class Engine {
 public:
  virtual ~Engine() = default;
  // Mean of the v_g (the BF contrast image), scan_rows * scan_cols.
  virtual std::vector<float> mean_image() = 0;
  // Sets the reference spectrum R(Q) = sum_g w_g V_g(Q) exp(+2 pi i Q.s_g) (the images shifted back by s_g and
  // summed with weights w_g = weight[g]; the Nyquist row/column of even sizes = 0).
  virtual void set_reference(const std::vector<Shift>& s, const std::vector<float>& weight) = 0;
  // The sideband correction applied to every group's spectrum by the next set_reference and correlate (off: none).
  virtual void set_sideband(const Sideband& sb) = 0;
  // The reference as an image: IFFT(R) / (N sum_g w_g), scan_rows * scan_cols.
  virtual std::vector<float> reference_image() = 0;
  // Peak of the circular cross-correlation of every v_g with the reference without v_g's own term (leave one out:
  // V_g conj(R - w_g V_g exp(+2 pi i Q.s_g)); otherwise the image's own noise correlates at its reference shift and
  // pulls the peak there at low dose), searched in the (2 w + 1)^2 window around round(predicted[g]) (w = window
  // half-width, scan pixels), sub-pixel by a 3-point parabola per axis. Ties: the first in window raster order.
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

// Shared by the backends: the 3-point parabola vertex offset in [-0.5, 0.5] (0 for a flat or non-peaked triple).
inline long wrap_index(long i, long n) { return ((i % n) + n) % n; }

inline double parabola_vertex(double m, double c, double p) {
  const double d = m - 2 * c + p;
  if (!(d < 0)) return 0;
  const double v = 0.5 * (m - p) / d;
  return v < -0.5 ? -0.5 : (v > 0.5 ? 0.5 : v);
}

}  // namespace qgpu::parallax::detail
