#pragma once
// Simulated SSB test data: frames straight from the simulator into a host Dataset with the calibration metadata
// the loader would attach, the truth phase at the scan positions, and comparison helpers.
#include <cmath>
#include <complex>
#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "io/sample/sample.hpp"
#include "resident/dataset.hpp"
#include "ssb/ssb.hpp"

namespace qgpu::ssb::testing {

// Scan 40 x 48 (not square, not a power of two), 64 x 64 detector, BF disk radius 64/6 = 10.7 px (357 pixels),
// scan step 2 simulation pixels = 0.33 A, 20 mrad at 300 kV, 60000 counts per frame (u16; about 170 per BF pixel).
inline sample::SampleSpec spec(double defocus_angstrom) {
  sample::SampleSpec s;
  s.scan_rows = 40;
  s.scan_cols = 48;
  s.det_rows = 64;
  s.det_cols = 64;
  s.defocus_angstrom = defocus_angstrom;
  s.dose_per_frame = 60000;
  s.threads = 2;
  return s;
}

inline nlohmann::json calibration(const sample::SampleSpec& s) {
  const sample::Sampling sm = sample::sampling(s);
  return {{"calibration",
           {{"energy_kev", s.energy_kev},
            {"semiangle_mrad", s.semiangle_mrad},
            {"scan_step_angstrom", sm.scan_step_angstrom},
            {"detector_mrad_per_pixel", sm.mrad_per_pixel},
            {"disk_radius_px", sm.disk_radius_px},
            {"defocus_angstrom", s.defocus_angstrom}}}};
}

inline Dataset simulate(const sample::SampleSpec& s) {
  HostArray4D h;
  h.shape = {s.scan_rows, s.scan_cols, s.det_rows, s.det_cols};
  h.dtype = s.dtype;
  h.bytes.resize(h.shape.elements() * dtype_size(s.dtype));
  sample::simulate_frames(s, 0, s.scan_rows * s.scan_cols, h.bytes.data());
  Provenance p;
  p.operation = "test.simulate";
  p.backend = "cpu";
  return Dataset::from_host(std::move(h), calibration(s), p);
}

// Simulated once per defocus and shared by the tests of this binary.
inline const Dataset& dataset(double defocus_angstrom) {
  static std::map<double, Dataset> cache;
  auto it = cache.find(defocus_angstrom);
  if (it == cache.end()) it = cache.emplace(defocus_angstrom, simulate(spec(defocus_angstrom))).first;
  return it->second;
}

inline const std::vector<float>& truth(double defocus_angstrom) {
  static std::map<double, std::vector<float>> cache;
  auto it = cache.find(defocus_angstrom);
  if (it == cache.end()) it = cache.emplace(defocus_angstrom, sample::object_phase_at_scan(spec(defocus_angstrom))).first;
  return it->second;
}

inline double pearson(const std::vector<float>& a, const std::vector<float>& b) {
  const std::size_t n = a.size();
  double ma = 0, mb = 0;
  for (std::size_t i = 0; i < n; ++i) {
    ma += a[i];
    mb += b[i];
  }
  ma /= double(n);
  mb /= double(n);
  double sab = 0, saa = 0, sbb = 0;
  for (std::size_t i = 0; i < n; ++i) {
    sab += (a[i] - ma) * (b[i] - mb);
    saa += (a[i] - ma) * (a[i] - ma);
    sbb += (b[i] - mb) * (b[i] - mb);
  }
  return sab / std::sqrt(saa * sbb);
}

inline double stddev(const std::vector<float>& a) {
  double m = 0, v = 0;
  for (float x : a) m += x;
  m /= double(a.size());
  for (float x : a) v += (x - m) * (x - m);
  return std::sqrt(v / double(a.size()));
}

// ||o_a - o_b|| / ||o_b|| of the complex objects amplitude * exp(i phase).
inline double relative_l2(const SsbResult& a, const SsbResult& b) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < a.phase.data.size(); ++i) {
    const std::complex<double> oa = std::polar(double(a.amplitude.data[i]), double(a.phase.data[i]));
    const std::complex<double> ob = std::polar(double(b.amplitude.data[i]), double(b.phase.data[i]));
    num += std::norm(oa - ob);
    den += std::norm(ob);
  }
  return std::sqrt(num / den);
}

// The calibration of the simulation with the least-squares (amplitude) weighting that the measured values in these
// tests were taken with; the weightings themselves are tested in test_ssb_weighting.cpp.
inline SsbParams true_params(double defocus_angstrom) {
  SsbParams p = params_from_metadata(dataset(defocus_angstrom));
  p.weighting = Weighting::amplitude;
  return p;
}

}  // namespace qgpu::ssb::testing
