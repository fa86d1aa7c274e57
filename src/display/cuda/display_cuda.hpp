#pragma once
// CUDA backend of the display domain: same contract as cpu/display_cpu.hpp, bit-identical results for
// render and histogram. Host pointers in and out; plain C++ header (no CUDA types).
#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "display/colormap.hpp"
#include "display/options.hpp"
#include "display/range.hpp"

namespace qgpu::display::cuda {

Range render(const float* data, std::size_t n, const DisplayOptions& o, const Lut& lut, std::uint8_t* rgba);
// n colormap indices to index (non-finite: 0, counted in *transparent); returns the range used.
Range render_indexed(const float* data, std::size_t n, const DisplayOptions& o, std::uint8_t* index,
                     std::size_t* transparent);
// The same from counts, each converted to the nearest float on the GPU (as the host's float(count)).
Range render_indexed(const std::uint64_t* data, std::size_t n, const DisplayOptions& o, std::uint8_t* index,
                     std::size_t* transparent);

Range histogram(const float* data, std::size_t n, const DisplayOptions& o, std::array<std::uint64_t, 256>& counts);

// cuFFT, single precision; matches the CPU reference within a float tolerance only.
std::vector<float> fft_log_magnitude(const float* data, std::size_t rows, std::size_t cols);

}  // namespace qgpu::display::cuda
