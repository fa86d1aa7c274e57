#pragma once
// Results of the display domain.
#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/provenance.hpp"

namespace qgpu::display {

// An 8-bit RGBA picture, row-major, 4 bytes per pixel (non-finite input pixels are transparent black 0,0,0,0).
struct Rgba {
  std::size_t rows = 0, cols = 0;
  std::vector<std::uint8_t> rgba;  // rows * cols * 4
  Provenance provenance;
};

// The colormap index of every pixel (render()'s colour is the colormap's entry at it), for palette pictures: one byte
// a pixel to move and encode instead of four. Non-finite pixels (render(): transparent black) get index 0 and are
// counted in `transparent`: a picture holding some needs a 257th colour (png: render() instead).
struct Indexed {
  std::size_t rows = 0, cols = 0;
  std::vector<std::uint8_t> index;  // rows * cols
  std::size_t transparent = 0;
  Provenance provenance;
};

// counts[i]: finite pixels drawn with colour index i (see scaling.hpp: color_index), i.e. 256 equal bins over
// [lo, hi] of the scaled values, values below lo in bin 0 and above hi in bin 255. Non-finite pixels are skipped.
struct Histogram {
  std::array<std::uint64_t, 256> counts{};
  double lo = 0, hi = 0;
  Provenance provenance;
};

}  // namespace qgpu::display
