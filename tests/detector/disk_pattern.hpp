#pragma once
// Synthetic summed diffraction patterns for the BF disk fit: a disk (pixel values by the covered fraction of the
// pixel, 4x4 sub-samples), an optional bright diffuse lobe around it, a flat background, Poisson counts.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>

#include "core/image.hpp"

namespace qgpu::test {

struct DiskPattern {
  std::size_t rows = 128, cols = 128;
  double center_row = 64, center_col = 64, radius = 18;
  double level = 400;       // mean counts inside the disk
  double background = 0;    // mean counts everywhere
  // Lobe: mean counts lobe x level just outside the disk, falling linearly to lobe_end x that at lobe_radius - 3,
  // then to nothing over ~3 px (a bright, flat-topped halo: its half-maximum lies near lobe_radius).
  double lobe = 0, lobe_end = 0.7, lobe_radius = 45;
  bool poisson = true;
  std::uint64_t seed = 1;

  double mean_at(std::size_t r, std::size_t c) const {
    int inside = 0;
    for (int a = 0; a < 4; ++a)
      for (int b = 0; b < 4; ++b) {
        const double y = double(r) - 0.5 + (a + 0.5) / 4, x = double(c) - 0.5 + (b + 0.5) / 4;
        if (std::hypot(y - center_row, x - center_col) <= radius) ++inside;
      }
    const double covered = inside / 16.0;
    double halo = 0;
    if (lobe > 0) {
      const double d = std::hypot(double(r) - center_row, double(c) - center_col);
      const double t = std::clamp((d - radius) / (lobe_radius - radius), 0.0, 1.0);
      halo = lobe * level * (1 - t * (1 - lobe_end)) / (1 + std::exp((d - (lobe_radius - 3)) / 1.0));
    }
    return covered * level + (1 - covered) * halo + background;
  }

  Image<std::uint64_t> make() const {
    Image<std::uint64_t> img;
    img.rows = rows;
    img.cols = cols;
    img.data.resize(rows * cols);
    std::mt19937_64 rng(seed);
    for (std::size_t r = 0; r < rows; ++r)
      for (std::size_t c = 0; c < cols; ++c) {
        const double m = mean_at(r, c);
        if (!poisson || m <= 0) {
          img.at(r, c) = std::uint64_t(std::llround(m));
        } else {
          std::poisson_distribution<std::uint64_t> p(m);
          img.at(r, c) = p(rng);
        }
      }
    return img;
  }
};

}  // namespace qgpu::test
