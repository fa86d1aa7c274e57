#pragma once
// Simulated parallax test data: defocused weak-phase samples straight from the simulator into host Datasets with
// the calibration metadata the loader would attach, detector-permuted copies (known rotation / transpose), truth.
#include <cmath>
#include <cstddef>
#include <functional>
#include <map>
#include <utility>
#include <vector>

#include "io/sample/sample.hpp"
#include "parallax/parallax.hpp"
#include "resident/dataset.hpp"
#include "ssb/ssb_fixtures.hpp"

namespace qgpu::parallax::testing {

// Scan 64 x 72 at 0.33 A (21 x 24 A), 64 x 64 detector, BF disk radius 10.7 px, 20 mrad at 300 kV: at C1 = 150 A
// the disk-edge images shift by C1 * 20 mrad = 3 A = 9 scan pixels.
inline sample::SampleSpec spec(double defocus_angstrom, double dose = 60000) {
  sample::SampleSpec s = ssb::testing::spec(defocus_angstrom);
  s.scan_rows = 64;
  s.scan_cols = 72;
  s.dose_per_frame = dose;
  return s;
}

inline const Dataset& dataset(double defocus_angstrom, double dose = 60000) {
  static std::map<std::pair<double, double>, Dataset> cache;
  const auto key = std::make_pair(defocus_angstrom, dose);
  auto it = cache.find(key);
  if (it == cache.end()) it = cache.emplace(key, ssb::testing::simulate(spec(defocus_angstrom, dose))).first;
  return it->second;
}

inline const std::vector<float>& truth(double defocus_angstrom) {
  static std::map<double, std::vector<float>> cache;
  auto it = cache.find(defocus_angstrom);
  if (it == cache.end()) it = cache.emplace(defocus_angstrom, sample::object_phase_at_scan(spec(defocus_angstrom))).first;
  return it->second;
}

// A copy whose detector pixel (r, c) holds the original's pixel source(r, c) (square detectors): a known
// scan-detector rotation / transpose on the same scattering.
inline Dataset permuted(const Dataset& ds, const std::function<std::pair<std::size_t, std::size_t>(std::size_t, std::size_t)>& source) {
  const Shape4D& sh = ds.shape();
  HostArray4D h;
  h.shape = sh;
  h.dtype = ds.dtype();
  const std::size_t es = dtype_size(ds.dtype()), frame = sh.frame_pixels();
  h.bytes.resize(sh.elements() * es);
  const std::uint8_t* in = ds.host_bytes().data();
  std::uint8_t* out = h.bytes.data();
  for (std::size_t r = 0; r < sh.det_rows; ++r)
    for (std::size_t c = 0; c < sh.det_cols; ++c) {
      const auto [sr, sc] = source(r, c);
      const std::size_t from = sr * sh.det_cols + sc, to = r * sh.det_cols + c;
      for (std::size_t s = 0; s < sh.frames(); ++s)
        for (std::size_t b = 0; b < es; ++b) out[(s * frame + to) * es + b] = in[(s * frame + from) * es + b];
    }
  return Dataset::from_host(std::move(h), ds.metadata(), ds.provenance());
}

// Angular distance in degrees (0..180).
inline double angle_distance(double a, double b) {
  const double d = std::fmod(std::abs(a - b), 360.0);
  return std::min(d, 360.0 - d);
}

// Every upsample-th pixel of the upsampled image: the values at the scan positions.
inline std::vector<float> at_scan_positions(const Image<float>& up, std::size_t factor) {
  std::vector<float> out;
  for (std::size_t r = 0; r < up.rows; r += factor)
    for (std::size_t c = 0; c < up.cols; c += factor) out.push_back(up.at(r, c));
  return out;
}

}  // namespace qgpu::parallax::testing

namespace qgpu::parallax::testing {

// Issue 31's cases: a 48 x 48 scan, 64 x 64 detector, 22 mrad, two-fold astigmatism A1 = 30 A at 20 degrees, the
// detector turned by 17 degrees (optionally transposed first), Poisson dose per frame; the file's calibration holds
// no defocus (no sign hint) and no rotation.
struct TruthCase {
  double energy_kev = 300, c1 = 120, a1 = 30, a1_angle_deg = 20, rotation_deg = 17;
  bool transpose = false;
  double dose = 5000;
};

inline sample::SampleSpec truth_spec(const TruthCase& t) {
  sample::SampleSpec s;
  s.scan_rows = s.scan_cols = 48;
  s.det_rows = s.det_cols = 64;
  s.energy_kev = t.energy_kev;
  s.semiangle_mrad = 22;
  s.defocus_angstrom = t.c1;
  s.astigmatism_angstrom = t.a1;
  s.astigmatism_angle_deg = t.a1_angle_deg;
  s.rotation_deg = t.rotation_deg;
  s.transpose = t.transpose;
  s.dose_per_frame = t.dose;
  s.defocus_in_calibration = false;
  s.threads = 2;
  return s;
}

inline Dataset truth_dataset(const TruthCase& t) {
  const sample::SampleSpec s = truth_spec(t);
  Dataset ds = ssb::testing::simulate(s);
  nlohmann::json md = ds.metadata();
  md["calibration"].erase("defocus_angstrom");
  return Dataset::from_host(ds.read(), md, ds.provenance());
}

}  // namespace qgpu::parallax::testing
