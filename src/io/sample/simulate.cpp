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
        const double chi = kPi * lambda * s.defocus_angstrom * k2;
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
  dispatch_count_dtype(s.dtype, [&](auto t) { simulate_typed(s, first, count, static_cast<decltype(t)*>(out)); });
}

std::vector<std::complex<float>> probe_wave(const SampleSpec& s) {
  validate(s);
  return probe(s, geometry(s));
}

std::vector<float> object_phase_at_scan(const SampleSpec& s) {
  validate(s);
  const Geometry g = geometry(s);
  const std::vector<float> phase = object_phase(s, g);
  std::vector<float> out(s.scan_rows * s.scan_cols);
  // The probe centre sits at window pixel (nr/2, nc/2).
  for (std::size_t r = 0; r < s.scan_rows; ++r)
    for (std::size_t c = 0; c < s.scan_cols; ++c)
      out[r * s.scan_cols + c] = phase[(r * s.scan_step_px + g.nr / 2) * g.obj_c + c * s.scan_step_px + g.nc / 2];
  return out;
}

}  // namespace qgpu::sample
