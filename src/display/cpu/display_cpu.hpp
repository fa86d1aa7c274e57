#pragma once
// CPU reference of the display domain. Inputs are validated by the dispatcher (display.cpp).
#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "display/colormap.hpp"
#include "display/options.hpp"
#include "display/range.hpp"

namespace qgpu::display::cpu {

// Display range of n pixels (percentiles of the scaled finite values, or vmin / vmax).
Range find_range(const float* data, std::size_t n, const DisplayOptions& o);

// Writes n RGBA pixels to rgba (4n bytes); returns the range used.
Range render(const float* data, std::size_t n, const DisplayOptions& o, const Lut& lut, std::uint8_t* rgba);
// n colormap indices to index (non-finite: 0, counted in *transparent); returns the range used.
Range render_indexed(const float* data, std::size_t n, const DisplayOptions& o, std::uint8_t* index,
                     std::size_t* transparent);

// Counts of each colour index over the finite pixels; returns the range used.
Range histogram(const float* data, std::size_t n, const DisplayOptions& o, std::array<std::uint64_t, 256>& counts);

// log(1 + |FFT2|), fftshifted, row-major rows x cols (FFTW, single precision).
std::vector<float> fft_log_magnitude(const float* data, std::size_t rows, std::size_t cols);

}  // namespace qgpu::display::cpu
