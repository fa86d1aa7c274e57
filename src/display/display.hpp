#pragma once
// Display domain: turns a 2D float image into colours (render), counts of each colour (histogram), the
// log-magnitude of its Fourier transform, and PNG files.
//
// Pipeline per pixel (scaling.hpp, identical arithmetic on both backends):
//   non-finite (NaN, +-inf) -> transparent black (0, 0, 0, 0), skipped by histogram;
//   s = scale(v)  (linear: v, log: log(1 + max(v, 0)), signed_log: sign(v) log(1 + |v|));
//   [lo, hi] = percentiles of the scaled finite values (options.hpp), or vmin / vmax;
//   index = floor((s - lo) / (hi - lo) * 255 + 0.5) clamped to 0..255 (0 when hi == lo);
//   colour = colormap LUT[index].
// Each runs where its input lives (backend_of(img.provenance), device.hpp): Backend::cpu is the reference,
// Backend::cuda and Backend::vulkan give bit-identical render and histogram results (vulkan: needs shaderFloat64);
// none falls back to another.
#include <string>

#include "core/image.hpp"
#include "device/device.hpp"
#include "display/colormap.hpp"
#include "display/options.hpp"
#include "display/png.hpp"
#include "display/results.hpp"
#include "display/scale.hpp"

namespace qgpu::display {

// Raises InvalidArgument for an empty image or bad options, BackendUnavailable for cuda without a GPU.
Rgba render(const Image<float>& img, const DisplayOptions& o);

// render()'s colours as colormap indices (results.hpp, Indexed): the same pipeline, the LUT lookup left out (cuda:
// one byte a pixel comes back; vulkan: rendered, then each colour's index looked up on the host).
Indexed render_indexed(const Image<float>& img, const DisplayOptions& o);
// The same for counts (a virtual image), indices equal to render_indexed(as_float(img)): cuda uploads the counts
// and converts them on the GPU (the host's uint64 -> float conversion is scalar, ~0.5 ms for 512x512); the other
// backends render as_float(img).
Indexed render_indexed(const Image<std::uint64_t>& img, const DisplayOptions& o);

Histogram histogram(const Image<float>& img, const DisplayOptions& o);

// log(1 + |FFT2(img)|) (forward, unnormalised), fftshifted: zero frequency at (rows/2, cols/2). Single precision
// on every backend (FFTW / cuFFT / VkFFT); they agree within 1e-4 * max(result) per pixel, not bit for bit.
Image<float> fft_log_magnitude(const Image<float>& img);

}  // namespace qgpu::display
