// Issue 31: the in-focus CoM rotation and its reported uncertainty against the simulated truth (17 degrees; the
// issue's case: 48 x 48 scan, 64 px detector, 22 mrad, C1 = 0, A1 = 30 A at 20 degrees). The simulator gives the
// patterns at 1e9 counts per frame once per case (their own noise is 1e-4 of the variance at 1e5 counts); each draw
// is real Poisson frames at D counts per frame from those expectations, their CoM computed here (sum k r / sum k),
// then dpc::calibrate_rotation. The precision the data allow (bench/rotation_bound.py, docs/benchmarks.md): on this
// scan the Cramer-Rao bound of an estimator that knew the object is 0.31 deg at 1e5 counts, 1.4 deg at 5000, 4.4 deg
// at 500 (300 kV), scaling as 1 / sqrt(counts): 0.1 deg at 1e6.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <map>
#include <random>
#include <tuple>
#include <vector>

#include "dpc/rotation.hpp"
#include "io/sample/sample.hpp"

namespace qgpu::dpc {
namespace {

constexpr double kTrueDeg = 17.0, kRefDose = 1e9;
constexpr std::size_t kScan = 48, kDet = 64;

sample::SampleSpec truth_spec(double kv, bool transpose) {
  sample::SampleSpec s;
  s.scan_rows = s.scan_cols = kScan;
  s.det_rows = s.det_cols = kDet;
  s.dtype = DType::u32;
  s.energy_kev = kv;
  s.semiangle_mrad = 22;
  s.defocus_angstrom = 0;
  s.astigmatism_angstrom = 30;
  s.astigmatism_angle_deg = 20;
  s.rotation_deg = kTrueDeg;
  s.transpose = transpose;
  s.dose_per_frame = kRefDose;
  s.defocus_in_calibration = false;
  s.threads = 2;
  return s;
}

// The expected patterns of a case (normalised to one count per frame), simulated once per binary.
const std::vector<double>& expectation(double kv, bool transpose) {
  static std::map<std::pair<double, bool>, std::vector<double>> cache;
  auto it = cache.find({kv, transpose});
  if (it != cache.end()) return it->second;
  const sample::SampleSpec s = truth_spec(kv, transpose);
  const std::size_t n = kScan * kScan * kDet * kDet;
  std::vector<std::uint32_t> counts(n);
  sample::simulate_frames(s, 0, kScan * kScan, counts.data());
  std::vector<double> p(n);
  for (std::size_t f = 0; f < kScan * kScan; ++f) {
    double tot = 0;
    for (std::size_t k = 0; k < kDet * kDet; ++k) tot += counts[f * kDet * kDet + k];
    for (std::size_t k = 0; k < kDet * kDet; ++k) p[f * kDet * kDet + k] = counts[f * kDet * kDet + k] / tot;
  }
  return cache.emplace(std::make_pair(kv, transpose), std::move(p)).first->second;
}

// Poisson frames at `dose` counts per frame, their CoM (frames without counts get the mean pattern's centre).
DpcResult poisson_com(const std::vector<double>& p, double dose, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  DpcResult d;
  for (Image<float>* im : {&d.dpc_row, &d.dpc_col}) {
    im->rows = im->cols = kScan;
    im->data.assign(kScan * kScan, 0.0f);
  }
  for (std::size_t f = 0; f < kScan * kScan; ++f) {
    double s = 0, sr = 0, sc = 0;
    for (std::size_t k = 0; k < kDet * kDet; ++k) {
      const double lam = dose * p[f * kDet * kDet + k];
      if (!(lam > 0)) continue;
      const double c = double(std::poisson_distribution<std::uint64_t>(lam)(rng));
      s += c, sr += c * double(k / kDet), sc += c * double(k % kDet);
    }
    d.dpc_row.data[f] = float(s > 0 ? sr / s - 0.5 * (kDet - 1) : 0.0);
    d.dpc_col.data[f] = float(s > 0 ? sc / s - 0.5 * (kDet - 1) : 0.0);
  }
  d.provenance.backend = "cpu";
  return d;
}

double signed_error(double angle_deg) { return std::remainder(angle_deg - kTrueDeg, 360.0); }

// Where the data hold it (48 x 48 scan at 1e6 counts per frame: the known-object bound is 0.1 deg), the fitted
// rotation is within 0.5 deg, determined, with the right transpose, and its reported uncertainty is below 0.5 deg.
TEST(RotationTruth, InFocusWithinHalfADegreeWhereTheDataHoldIt) {
  for (const auto& [kv, transpose] : {std::pair{300.0, false}, std::pair{80.0, true}})
    for (std::uint64_t seed = 1; seed <= 3; ++seed) {
      const RotationResult r = calibrate_rotation(poisson_com(expectation(kv, transpose), 1e6, seed));
      std::printf("%g kV%s 1e6 counts seed %llu: %.3f +- %.3f deg, confidence %.3f\n", kv, transpose ? " T" : "",
                  (unsigned long long)seed, r.angle_deg, r.angle_sigma_deg, r.confidence);
      EXPECT_EQ(r.transpose, transpose) << kv;
      EXPECT_LE(std::abs(signed_error(r.angle_deg)), 0.5) << kv << " kV seed " << seed;
      EXPECT_LT(r.angle_sigma_deg, 0.5) << kv << " kV seed " << seed;
      EXPECT_TRUE(r.determined) << kv << " kV seed " << seed;
    }
}

// The reported standard error is honest at every dose: each error within 3 sigma, most within 2 sigma (a calibrated
// sigma puts 95 % there; the bench over 16 draws per case, docs/benchmarks.md), and no determined answer more than
// 2 deg off, nor one with the wrong transpose or 180-degree choice. Doses: 500 (the angle is lost: bound 4-6 deg),
// 5000 (1.4-1.5 deg: not determined on this scan), 1e5 (0.3 deg).
TEST(RotationTruth, ReportedUncertaintyIsHonestAtEveryDose) {
  int trials = 0, within2 = 0, determined = 0;
  for (const auto& [kv, transpose] : {std::pair{300.0, false}, std::pair{80.0, true}})
    for (const double dose : {500.0, 5000.0, 100000.0})
      for (std::uint64_t seed = 1; seed <= 6; ++seed) {
        const RotationResult r =
            calibrate_rotation(poisson_com(expectation(kv, transpose), dose, 1000 * std::uint64_t(dose) + seed));
        const double e = signed_error(r.angle_deg);
        const bool right_way = r.transpose == transpose && std::abs(e) < 90;
        std::printf("%g kV%s %g counts seed %llu: %.2f +- %.2f deg (error %.2f), transpose %d, determined %d\n", kv,
                    transpose ? " T" : "", dose, (unsigned long long)seed, r.angle_deg, r.angle_sigma_deg, e,
                    int(r.transpose), int(r.determined));
        EXPECT_TRUE(std::isfinite(r.angle_sigma_deg));
        EXPECT_GT(r.angle_sigma_deg, 0.0);
        if (r.determined) {
          ++determined;
          EXPECT_TRUE(right_way) << kv << " kV " << dose << " seed " << seed;
          EXPECT_LE(std::abs(e), 2.0) << kv << " kV " << dose << " seed " << seed;
          EXPECT_LE(r.angle_sigma_deg, kRotationSigmaDetermined);
        }
        if (!right_way) {  // the angle is then meaningless; it must not claim to be known
          EXPECT_FALSE(r.determined) << kv << " kV " << dose << " seed " << seed;
          continue;
        }
        ++trials;
        EXPECT_LE(std::abs(e), 3 * r.angle_sigma_deg) << kv << " kV " << dose << " seed " << seed;
        within2 += std::abs(e) <= 2 * r.angle_sigma_deg;
        if (dose >= 1e5) EXPECT_TRUE(r.determined) << kv << " kV seed " << seed;  // sigma 0.3 < 0.5
        if (dose <= 5000) EXPECT_FALSE(r.determined) << kv << " kV " << dose << " seed " << seed;
      }
  std::printf("right transpose and 180-degree choice: %d of 36; within 2 sigma: %d; determined: %d\n", trials,
              within2, determined);
  EXPECT_GE(trials, 24);  // 500 counts may lose the transpose or the 180-degree choice; 5000 and 1e5 must not
  EXPECT_GE(within2, int(0.8 * trials));
}

}  // namespace
}  // namespace qgpu::dpc
