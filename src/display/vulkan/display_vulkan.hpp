#pragma once
// vulkan backend of the display domain: same contract as cpu/display_cpu.hpp, bit-identical render and histogram
// (display/vulkan/scaling.glsl is scaling.hpp's arithmetic in double). Host pointers in and out; no Vulkan types.
// The display range: scaled keys and the finite count on the device, the percentile ranks picked on the host
// (std::nth_element over the downloaded keys, as the reference). Needs shaderFloat64 (BackendUnavailable without).
// The FFT view: VkFFT C2C of the image, log(1 + |F|) fftshifted by a shader.
#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "display/colormap.hpp"
#include "display/options.hpp"
#include "display/range.hpp"

namespace qgpu::display::vulkan {

Range render(const float* data, std::size_t n, const DisplayOptions& o, const Lut& lut, std::uint8_t* rgba);

Range histogram(const float* data, std::size_t n, const DisplayOptions& o, std::array<std::uint64_t, 256>& counts);

// VkFFT (device/vulkan/vkfft_plans.hpp), single precision; matches the CPU reference within a float tolerance only.
std::vector<float> fft_log_magnitude(const float* data, std::size_t rows, std::size_t cols);

}  // namespace qgpu::display::vulkan
