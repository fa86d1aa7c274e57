// The simulated sample is physically sensible: bright-field disk where expected, Poisson counts, dose.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <numeric>
#include <vector>

#include "io/sample/sample.hpp"

using namespace qgpu;

TEST(Sample, WavelengthAt300kV) {
  // Relativistic wavelength, 300 keV -> 1.969 pm.
  EXPECT_NEAR(sample::electron_wavelength_angstrom(300.0), 0.01969, 0.00001);
  EXPECT_NEAR(sample::electron_wavelength_angstrom(200.0), 0.02508, 0.00001);
}

TEST(Sample, BrightFieldDiskHoldsTheCounts) {
  sample::SampleSpec s;
  s.scan_rows = 4;
  s.scan_cols = 4;
  s.det_rows = s.det_cols = 48;
  s.dose_per_frame = 10000;
  std::vector<std::uint16_t> frames(16 * 48 * 48);
  sample::simulate_frames(s, 0, 16, frames.data());
  const double radius = 48 / 6.0;
  double inside = 0, total = 0;
  for (std::size_t f = 0; f < 16; ++f)
    for (std::size_t r = 0; r < 48; ++r)
      for (std::size_t c = 0; c < 48; ++c) {
        const double v = frames[(f * 48 + r) * 48 + c];
        total += v;
        const double d = std::hypot(double(r) - 24.0, double(c) - 24.0);
        if (d <= radius + 1.5) inside += v;
      }
  // Mean counts per frame near the dose (Poisson: relative spread ~1/sqrt(160000)), mostly in the disk.
  EXPECT_NEAR(total / 16.0, 10000.0, 300.0);
  EXPECT_GT(inside / total, 0.85);
}

TEST(Sample, DeterministicWhateverTheThreads) {
  sample::SampleSpec s;
  s.scan_rows = s.scan_cols = 3;
  s.det_rows = s.det_cols = 32;
  std::vector<std::uint8_t> a(9 * 32 * 32), b(9 * 32 * 32), c(4 * 32 * 32);
  s.dtype = DType::u8;
  s.threads = 1;
  sample::simulate_frames(s, 0, 9, a.data());
  s.threads = 4;
  sample::simulate_frames(s, 0, 9, b.data());
  sample::simulate_frames(s, 5, 4, c.data());
  EXPECT_EQ(a, b);
  EXPECT_TRUE(std::equal(c.begin(), c.end(), a.begin() + 5 * 32 * 32));
  EXPECT_GT(std::accumulate(a.begin(), a.end(), 0u), 0u);
}

TEST(Sample, TruthPhaseShowsAtoms) {
  sample::SampleSpec s;
  s.scan_rows = s.scan_cols = 40;
  const std::vector<float> ph = sample::object_phase_at_scan(s);
  const auto [mn, mx] = std::minmax_element(ph.begin(), ph.end());
  EXPECT_GE(*mn, 0.0f);
  EXPECT_GT(*mx, 0.5f * float(s.atom_phase));
  EXPECT_LT(*mx, 1.5f * float(s.atom_phase));
}

// A turned detector (issue 31): the simulation frame is the detector's, the scan frame turn(detector). For a quarter
// turn or a transpose the turned frames are the unturned frames with their detector pixels permuted (no
// interpolation on either side), so the turned path must reproduce them: K_scan = R(a) T K_det, i.e. the detector
// pixel at offset d holds the unturned pixel at offset R(a) T d. High dose: only Poisson noise (~6e-4) differs.
TEST(Sample, QuarterTurnsAndTransposeAreTheDetectorPermuted) {
  sample::SampleSpec s;
  s.scan_rows = 5;
  s.scan_cols = 6;
  s.det_rows = s.det_cols = 48;
  s.dtype = DType::u32;
  s.dose_per_frame = 1e9;
  s.defocus_angstrom = 40;
  s.astigmatism_angstrom = 15;
  s.astigmatism_angle_deg = 20;
  const std::size_t n = 48, frames = 30, h = n / 2;
  std::vector<std::uint32_t> plain(frames * n * n), turned(frames * n * n);
  sample::simulate_frames(s, 0, frames, plain.data());
  struct Case { double angle; bool transpose; };
  for (const Case cs : {Case{90, false}, Case{180, false}, Case{0, true}, Case{270, true}}) {
    sample::SampleSpec t = s;
    t.rotation_deg = cs.angle;
    t.transpose = cs.transpose;
    sample::simulate_frames(t, 0, frames, turned.data());
    const double c = std::round(std::cos(cs.angle * M_PI / 180)), sn = std::round(std::sin(cs.angle * M_PI / 180));
    double num = 0, den = 0;
    for (std::size_t f = 0; f < frames; ++f)
      for (std::size_t r = 0; r < n; ++r)
        for (std::size_t col = 0; col < n; ++col) {
          double dr = double(r) - double(h), dc = double(col) - double(h);
          if (cs.transpose) std::swap(dr, dc);
          const long sr = long(std::lround(c * dr - sn * dc)) + long(h), sc = long(std::lround(sn * dr + c * dc)) + long(h);
          const double a = turned[(f * n + r) * n + col];
          const double b = plain[(f * n + std::size_t((sr + long(n)) % long(n))) * n + std::size_t((sc + long(n)) % long(n))];
          num += (a - b) * (a - b);
          den += b * b;
        }
    std::printf("rotation %.0f transpose %d: relative L2 %.2e\n", cs.angle, int(cs.transpose), std::sqrt(num / den));
    EXPECT_LT(std::sqrt(num / den), 2e-3) << "rotation " << cs.angle << " transpose " << cs.transpose;
  }
  // The truth is the object at the probe centres whatever the turn.
  sample::SampleSpec t = s;
  t.rotation_deg = 17;
  t.transpose = true;
  EXPECT_EQ(sample::object_phase_at_scan(t), sample::object_phase_at_scan(s));
}
