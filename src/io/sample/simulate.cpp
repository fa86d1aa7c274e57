#include <fftw3.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <limits>
#include <mutex>
#include <random>
#include <thread>

#include "core/checked.hpp"
#include "core/error.hpp"
#include "core/fftw_planner.hpp"
#include "core/rng.hpp"
#include "io/sample/sample.hpp"

namespace qgpu::sample {

namespace {

constexpr double kPi = 3.14159265358979323846;

std::uint64_t poisson(Rng& rng, double lambda) {
  if (lambda <= 0) return 0;
  if (lambda < 30) {  // inversion
    const double u = rng.uniform();
    double p = std::exp(-lambda), cdf = p;
    std::uint64_t k = 0;
    while (u > cdf && k < 1000) {
      ++k;
      p *= lambda / double(k);
      cdf += p;
    }
    return k;
  }
  std::mt19937_64 eng(rng.next());
  return std::poisson_distribution<std::uint64_t>(lambda)(eng);
}

bool turned(const SampleSpec& s) { return s.rotation_deg != 0 || s.transpose; }

struct Geometry {
  std::size_t nr, nc;        // window = detector
  double dk;                 // 1/angstrom per detector pixel
  double dxr, dxc;           // angstrom per simulation pixel
  std::size_t obj_r, obj_c;  // object grid
};

Geometry geometry(const SampleSpec& s) {
  const Sampling sm = sampling(s);
  Geometry g;
  g.nr = s.det_rows;
  g.nc = s.det_cols;
  g.dk = sm.dk_per_angstrom;
  g.dxr = 1.0 / (double(g.nr) * g.dk);
  g.dxc = 1.0 / (double(g.nc) * g.dk);
  g.obj_r = (s.scan_rows - 1) * s.scan_step_px + g.nr;
  g.obj_c = (s.scan_cols - 1) * s.scan_step_px + g.nc;
  return g;
}

void validate(const SampleSpec& s) {
  if (!s.scan_rows || !s.scan_cols || s.det_rows < 8 || s.det_cols < 8 || !s.scan_step_px)
    throw InvalidArgument("sample: scan must be non-empty, detector at least 8x8, scan step >= 1");
  if (!is_count_dtype(s.dtype)) throw DTypeError("sample: dtype must be uint8, uint16 or uint32");
  // Every size the writer forms from the shape, checked: an absurd scan or detector is an error, not a wrap.
  const std::uint64_t bytes = checked_product<InvalidArgument>(
      {s.scan_rows, s.scan_cols, s.det_rows, s.det_cols, dtype_size(s.dtype)}, "sample: scan x detector bytes");
  if (bytes > kMaxArrayBytes)
    throw InvalidArgument("sample: scan " + std::to_string(s.scan_rows) + " x " + std::to_string(s.scan_cols) +
                          " of " + std::to_string(s.det_rows) + " x " + std::to_string(s.det_cols) +
                          " frames is larger than any file can be");
  if (s.energy_kev <= 0 || s.semiangle_mrad <= 0) throw InvalidArgument("sample: energy and semiangle must be > 0");
  if (!std::isfinite(s.astigmatism_angstrom) || s.astigmatism_angstrom < 0 || !std::isfinite(s.astigmatism_angle_deg))
    throw InvalidArgument("sample: astigmatism must be finite and >= 0, its angle finite");
  if (!std::isfinite(s.rotation_deg) || !std::isfinite(s.defocus_angstrom))
    throw InvalidArgument("sample: rotation and defocus must be finite");
  if (turned(s) && s.det_rows != s.det_cols)
    throw InvalidArgument("sample: a rotated or transposed detector must be square");
}

// Detector (simulation) frame -> scan frame, the dpc::rotate_field convention: transpose first, then rotate.
struct Turn {
  double c = 1, s = 0;
  bool t = false;
  void to_scan(double r, double col, double& out_r, double& out_c) const {
    if (t) std::swap(r, col);
    out_r = c * r - s * col;
    out_c = s * r + c * col;
  }
  void to_detector(double r, double col, double& out_r, double& out_c) const {  // the inverse
    out_r = c * r + s * col;
    out_c = -s * r + c * col;
    if (t) std::swap(out_r, out_c);
  }
};

Turn turn_of(const SampleSpec& s) {
  Turn t;
  t.c = std::cos(s.rotation_deg * kPi / 180.0);
  t.s = std::sin(s.rotation_deg * kPi / 180.0);
  t.t = s.transpose;
  return t;
}

// chi of the scan-frame aberrations (C1, A1) at a scan-frame k = (row, col), 1/angstrom (ssb_math.hpp's form).
double chi_at(const SampleSpec& s, double lambda, double kr, double kc) {
  double chi = kPi * lambda * s.defocus_angstrom * (kr * kr + kc * kc);
  if (s.astigmatism_angstrom != 0) {
    const double a2 = 2 * s.astigmatism_angle_deg * kPi / 180.0;
    chi += kPi * lambda * s.astigmatism_angstrom * ((kc * kc - kr * kr) * std::cos(a2) + 2 * kc * kr * std::sin(a2));
  }
  return chi;
}

// The object's phase at a scan-frame point (angstrom): the lattice of object_phase evaluated analytically.
double phase_at(const SampleSpec& s, double y, double x) {
  const double L = s.lattice_angstrom, reach = 4.0 * s.atom_sigma_angstrom;
  const double inv2s2 = 1.0 / (2.0 * s.atom_sigma_angstrom * s.atom_sigma_angstrom);
  double v = 0;
  for (long i = long(std::floor((y - reach) / L - 0.37)); i <= long(std::ceil((y + reach) / L - 0.37)); ++i)
    for (long j = long(std::floor((x - reach) / L - 0.29)); j <= long(std::ceil((x + reach) / L - 0.29)); ++j) {
      const double dy = y - (i + 0.37) * L, dx = x - (j + 0.29) * L;
      if (std::abs(dy) > reach || std::abs(dx) > reach) continue;
      v += s.atom_phase * (((i + j) & 1) ? 0.55 : 1.0) * std::exp(-(dy * dy + dx * dx) * inv2s2);
    }
  return v;
}

// Object phase on the simulation grid: two species alternating on a square lattice.
std::vector<float> object_phase(const SampleSpec& s, const Geometry& g) {
  std::vector<float> phase(g.obj_r * g.obj_c, 0.0f);
  const double h = g.obj_r * g.dxr, w = g.obj_c * g.dxc;
  const double reach = 4.0 * s.atom_sigma_angstrom;
  const double inv2s2 = 1.0 / (2.0 * s.atom_sigma_angstrom * s.atom_sigma_angstrom);
  for (long i = -1; i * s.lattice_angstrom < h + s.lattice_angstrom; ++i)
    for (long j = -1; j * s.lattice_angstrom < w + s.lattice_angstrom; ++j) {
      const double ay = (i + 0.37) * s.lattice_angstrom, ax = (j + 0.29) * s.lattice_angstrom;
      const double amp = s.atom_phase * (((i + j) & 1) ? 0.55 : 1.0);
      const long r0 = std::max(0L, long((ay - reach) / g.dxr)), r1 = std::min(long(g.obj_r) - 1, long((ay + reach) / g.dxr));
      const long c0 = std::max(0L, long((ax - reach) / g.dxc)), c1 = std::min(long(g.obj_c) - 1, long((ax + reach) / g.dxc));
      for (long r = r0; r <= r1; ++r)
        for (long c = c0; c <= c1; ++c) {
          const double dy = r * g.dxr - ay, dx = c * g.dxc - ax;
          phase[r * g.obj_c + c] += float(amp * std::exp(-(dy * dy + dx * dx) * inv2s2));
        }
    }
  return phase;
}

// Probe in the window, centred at (nr/2, nc/2), sum |probe|^2 = 1.
std::vector<std::complex<float>> probe(const SampleSpec& s, const Geometry& g) {
  const double lambda = electron_wavelength_angstrom(s.energy_kev);
  const double kmax = s.semiangle_mrad * 1e-3 / lambda;
  std::vector<std::complex<float>> a(g.nr * g.nc), p(g.nr * g.nc);
  for (std::size_t r = 0; r < g.nr; ++r)
    for (std::size_t c = 0; c < g.nc; ++c) {
      const double kr = (long(r) - (r >= (g.nr + 1) / 2 ? long(g.nr) : 0)) * g.dk;
      const double kc = (long(c) - (c >= (g.nc + 1) / 2 ? long(g.nc) : 0)) * g.dk;
      const double k2 = kr * kr + kc * kc;
      if (k2 <= kmax * kmax) {
        double chi = kPi * lambda * s.defocus_angstrom * k2;
        if (s.astigmatism_angstrom != 0 || turned(s)) {  // the scan frame's chi at this detector-frame k
          double sr, sc;
          turn_of(s).to_scan(kr, kc, sr, sc);
          chi = chi_at(s, lambda, sr, sc);
        }
        a[r * g.nc + c] = std::polar(1.0f, float(-chi));
      }
    }
  {
    std::lock_guard<std::mutex> lock(fftw_planner_mutex());
    fftwf_plan plan = fftwf_plan_dft_2d(int(g.nr), int(g.nc), reinterpret_cast<fftwf_complex*>(a.data()),
                                        reinterpret_cast<fftwf_complex*>(p.data()), FFTW_BACKWARD, FFTW_ESTIMATE);
    fftwf_execute(plan);
    fftwf_destroy_plan(plan);
  }
  std::vector<std::complex<float>> centred(g.nr * g.nc);
  double norm = 0;
  for (const auto& v : p) norm += std::norm(v);
  const float scale = float(1.0 / std::sqrt(norm));
  for (std::size_t r = 0; r < g.nr; ++r)
    for (std::size_t c = 0; c < g.nc; ++c)
      centred[((r + g.nr / 2) % g.nr) * g.nc + (c + g.nc / 2) % g.nc] = p[r * g.nc + c] * scale;
  return centred;
}

double default_dose(DType t) { return t == DType::u8 ? 200.0 : t == DType::u16 ? 4000.0 : 20000.0; }

template <class T>
void simulate_typed(const SampleSpec& s, std::size_t first, std::size_t count, T* out) {
  const Geometry g = geometry(s);
  const std::vector<float> phase = object_phase(s, g);
  const std::vector<std::complex<float>> pr = probe(s, g);
  const double dose = sampling(s).dose_per_frame;
  const std::size_t n = g.nr * g.nc;
  std::vector<std::complex<float>> transmission(phase.size());
  for (std::size_t i = 0; i < phase.size(); ++i) transmission[i] = std::polar(1.0f, phase[i]);

  fftwf_complex* probe_buf = fftwf_alloc_complex(n);
  fftwf_plan plan;
  {
    std::lock_guard<std::mutex> lock(fftw_planner_mutex());
    plan = fftwf_plan_dft_2d(int(g.nr), int(g.nc), probe_buf, probe_buf, FFTW_FORWARD, FFTW_ESTIMATE);
  }
  const unsigned nthreads =
      std::max(1u, std::min<unsigned>(s.threads ? s.threads : std::thread::hardware_concurrency(), unsigned(count)));
  const double maxv = double(std::numeric_limits<T>::max());
  auto worker = [&](unsigned t) {
    fftwf_complex* buf = fftwf_alloc_complex(n);
    auto* psi = reinterpret_cast<std::complex<float>*>(buf);
    for (std::size_t i = t; i < count; i += nthreads) {
      const std::size_t f = first + i;
      const std::size_t r0 = (f / s.scan_cols) * s.scan_step_px, c0 = (f % s.scan_cols) * s.scan_step_px;
      for (std::size_t r = 0; r < g.nr; ++r)
        for (std::size_t c = 0; c < g.nc; ++c)
          psi[r * g.nc + c] = pr[r * g.nc + c] * transmission[(r0 + r) * g.obj_c + c0 + c];
      fftwf_execute_dft(plan, buf, buf);
      Rng rng(s.seed * 0x9e3779b97f4a7c15ull ^ (f + 1));
      T* frame = out + i * n;
      const double scale = dose / double(n);  // FFT without normalisation: sum |Psi|^2 = n * sum |psi|^2
      for (std::size_t r = 0; r < g.nr; ++r)
        for (std::size_t c = 0; c < g.nc; ++c) {
          const double lam = scale * std::norm(psi[r * g.nc + c]);
          const double k = double(poisson(rng, lam));
          // fftshift: zero frequency at (nr/2, nc/2)
          frame[((r + g.nr / 2) % g.nr) * g.nc + (c + g.nc / 2) % g.nc] = T(std::min(k, maxv));
        }
    }
    fftwf_free(buf);
  };
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < nthreads; ++t) threads.emplace_back(worker, t);
  for (auto& th : threads) th.join();
  {
    std::lock_guard<std::mutex> lock(fftw_planner_mutex());
    fftwf_destroy_plan(plan);
  }
  fftwf_free(probe_buf);
}

// A rotated or transposed detector: the simulation frame is the detector's (k_sim = K_det, no interpolation of the
// patterns); the scan frame is turn(sim), so the probe positions are fractional simulation pixels (the probe is
// shifted exactly by a Fourier phase ramp), the object is the analytic lattice evaluated at turn(x_sim) and chi is
// the scan frame's at turn(k_sim).
struct TurnedObject {
  long origin_r = 0, origin_c = 0;  // simulation-frame pixel of the object grid's (0, 0)
  std::size_t rows = 0, cols = 0;
  std::vector<std::complex<float>> transmission;
};

// Simulation-frame pixel of the window's (0, 0) for frame f: the probe centre (window pixel (nr/2, nc/2)) lands at
// the scan-frame point it has without a turn, scan position * step + (nr/2, nc/2): the truth is the same.
void window_origin(const SampleSpec& s, const Geometry& g, const Turn& t, std::size_t f, double& r, double& c) {
  const double hr = double(g.nr / 2), hc = double(g.nc / 2);
  t.to_detector(double((f / s.scan_cols) * s.scan_step_px) + hr, double((f % s.scan_cols) * s.scan_step_px) + hc, r, c);
  r -= hr;
  c -= hc;
}

TurnedObject turned_object(const SampleSpec& s, const Geometry& g) {
  const Turn t = turn_of(s);
  double lo_r = 1e300, lo_c = 1e300, hi_r = -1e300, hi_c = -1e300;
  for (std::size_t r : {std::size_t(0), s.scan_rows - 1})
    for (std::size_t c : {std::size_t(0), s.scan_cols - 1}) {
      double pr, pc;
      window_origin(s, g, t, r * s.scan_cols + c, pr, pc);
      lo_r = std::min(lo_r, pr), hi_r = std::max(hi_r, pr), lo_c = std::min(lo_c, pc), hi_c = std::max(hi_c, pc);
    }
  TurnedObject o;
  o.origin_r = long(std::floor(lo_r));
  o.origin_c = long(std::floor(lo_c));
  o.rows = std::size_t(long(std::ceil(hi_r)) - o.origin_r) + g.nr + 2;
  o.cols = std::size_t(long(std::ceil(hi_c)) - o.origin_c) + g.nc + 2;
  o.transmission.resize(o.rows * o.cols);
  for (std::size_t u = 0; u < o.rows; ++u)
    for (std::size_t v = 0; v < o.cols; ++v) {
      double y, x;
      t.to_scan(double(long(u) + o.origin_r) * g.dxr, double(long(v) + o.origin_c) * g.dxc, y, x);
      o.transmission[u * o.cols + v] = std::polar(1.0f, float(phase_at(s, y, x)));
    }
  return o;
}

template <class T>
void simulate_turned(const SampleSpec& s, std::size_t first, std::size_t count, T* out) {
  const Geometry g = geometry(s);
  const Turn turn = turn_of(s);
  const TurnedObject obj = turned_object(s, g);
  const double lambda = electron_wavelength_angstrom(s.energy_kev), kmax = s.semiangle_mrad * 1e-3 / lambda;
  const double dose = sampling(s).dose_per_frame;
  const std::size_t n = g.nr * g.nc;
  // A(k_sim) exp(-i chi(turn k_sim)) on the FFT grid, and the norm of its inverse transform.
  std::vector<std::complex<double>> a(n);
  double norm = 0;
  for (std::size_t r = 0; r < g.nr; ++r)
    for (std::size_t c = 0; c < g.nc; ++c) {
      const double kr = (long(r) - (r >= (g.nr + 1) / 2 ? long(g.nr) : 0)) * g.dk;
      const double kc = (long(c) - (c >= (g.nc + 1) / 2 ? long(g.nc) : 0)) * g.dk;
      if (kr * kr + kc * kc > kmax * kmax) continue;
      double sr, sc;
      turn.to_scan(kr, kc, sr, sc);
      a[r * g.nc + c] = std::polar(1.0, -chi_at(s, lambda, sr, sc));
      norm += 1.0;
    }
  const float scale_probe = float(1.0 / std::sqrt(norm * double(n)));  // sum |IFFT|^2 = n sum |a|^2

  fftwf_complex* plan_buf = fftwf_alloc_complex(n);
  fftwf_plan fwd, bwd;
  {
    std::lock_guard<std::mutex> lock(fftw_planner_mutex());
    fwd = fftwf_plan_dft_2d(int(g.nr), int(g.nc), plan_buf, plan_buf, FFTW_FORWARD, FFTW_ESTIMATE);
    bwd = fftwf_plan_dft_2d(int(g.nr), int(g.nc), plan_buf, plan_buf, FFTW_BACKWARD, FFTW_ESTIMATE);
  }
  const unsigned nthreads =
      std::max(1u, std::min<unsigned>(s.threads ? s.threads : std::thread::hardware_concurrency(), unsigned(count)));
  const double maxv = double(std::numeric_limits<T>::max());
  auto worker = [&](unsigned th) {
    fftwf_complex* pbuf = fftwf_alloc_complex(n);
    fftwf_complex* buf = fftwf_alloc_complex(n);
    auto* pr = reinterpret_cast<std::complex<float>*>(pbuf);
    auto* psi = reinterpret_cast<std::complex<float>*>(buf);
    for (std::size_t i = th; i < count; i += nthreads) {
      const std::size_t f = first + i;
      double xr, xc;
      window_origin(s, g, turn, f, xr, xc);
      const long ir = long(std::floor(xr)), ic = long(std::floor(xc));
      const double fr = xr - double(ir), fc = xc - double(ic);
      for (std::size_t r = 0; r < g.nr; ++r)
        for (std::size_t c = 0; c < g.nc; ++c) {
          const double qr = double(long(r) - (r >= (g.nr + 1) / 2 ? long(g.nr) : 0)) / double(g.nr);
          const double qc = double(long(c) - (c >= (g.nc + 1) / 2 ? long(g.nc) : 0)) / double(g.nc);
          const std::complex<double> v = a[r * g.nc + c] * std::polar(1.0, -2 * kPi * (qr * fr + qc * fc));
          pr[r * g.nc + c] = std::complex<float>(v);
        }
      fftwf_execute_dft(bwd, pbuf, pbuf);
      const std::size_t r0 = std::size_t(ir - obj.origin_r), c0 = std::size_t(ic - obj.origin_c);
      for (std::size_t r = 0; r < g.nr; ++r)
        for (std::size_t c = 0; c < g.nc; ++c)  // probe centred at window pixel (nr/2, nc/2) + fractional shift
          psi[((r + g.nr / 2) % g.nr) * g.nc + (c + g.nc / 2) % g.nc] =
              pr[r * g.nc + c] * scale_probe *
              obj.transmission[(r0 + (r + g.nr / 2) % g.nr) * obj.cols + c0 + (c + g.nc / 2) % g.nc];
      fftwf_execute_dft(fwd, buf, buf);
      Rng rng(s.seed * 0x9e3779b97f4a7c15ull ^ (f + 1));
      T* frame = out + i * n;
      const double scale = dose / double(n);
      for (std::size_t r = 0; r < g.nr; ++r)
        for (std::size_t c = 0; c < g.nc; ++c) {
          const double k = double(poisson(rng, scale * std::norm(psi[r * g.nc + c])));
          frame[((r + g.nr / 2) % g.nr) * g.nc + (c + g.nc / 2) % g.nc] = T(std::min(k, maxv));
        }
    }
    fftwf_free(pbuf);
    fftwf_free(buf);
  };
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < nthreads; ++t) threads.emplace_back(worker, t);
  for (auto& th : threads) th.join();
  {
    std::lock_guard<std::mutex> lock(fftw_planner_mutex());
    fftwf_destroy_plan(fwd);
    fftwf_destroy_plan(bwd);
  }
  fftwf_free(plan_buf);
}

}  // namespace

Sampling sampling(const SampleSpec& s) {
  validate(s);
  Sampling sm;
  sm.wavelength_angstrom = electron_wavelength_angstrom(s.energy_kev);
  sm.disk_radius_px = s.disk_radius_px > 0 ? s.disk_radius_px : double(s.det_rows) / 6.0;
  const double kmax = s.semiangle_mrad * 1e-3 / sm.wavelength_angstrom;
  sm.dk_per_angstrom = kmax / sm.disk_radius_px;
  sm.dx_angstrom = 1.0 / (double(s.det_rows) * sm.dk_per_angstrom);
  sm.mrad_per_pixel = s.semiangle_mrad / sm.disk_radius_px;
  sm.scan_step_angstrom = double(s.scan_step_px) * sm.dx_angstrom;
  sm.dose_per_frame = s.dose_per_frame > 0 ? s.dose_per_frame : default_dose(s.dtype);
  return sm;
}

void simulate_frames(const SampleSpec& s, std::size_t first, std::size_t count, void* out) {
  validate(s);
  if (first + count > s.scan_rows * s.scan_cols) throw InvalidArgument("sample: frame range past the scan");
  dispatch_count_dtype(s.dtype, [&](auto t) {
    if (turned(s))
      simulate_turned(s, first, count, static_cast<decltype(t)*>(out));
    else
      simulate_typed(s, first, count, static_cast<decltype(t)*>(out));
  });
}

std::vector<std::complex<float>> probe_wave(const SampleSpec& s) {
  validate(s);
  return probe(s, geometry(s));
}

std::vector<float> object_phase_at_scan(const SampleSpec& s) {
  validate(s);
  const Geometry g = geometry(s);
  std::vector<float> out(s.scan_rows * s.scan_cols);
  const std::vector<float> phase = object_phase(s, g);
  // The probe centre sits at window pixel (nr/2, nc/2) (a turned detector's too: simulate_turned).
  for (std::size_t r = 0; r < s.scan_rows; ++r)
    for (std::size_t c = 0; c < s.scan_cols; ++c)
      out[r * s.scan_cols + c] = phase[(r * s.scan_step_px + g.nr / 2) * g.obj_c + c * s.scan_step_px + g.nc / 2];
  return out;
}

}  // namespace qgpu::sample
