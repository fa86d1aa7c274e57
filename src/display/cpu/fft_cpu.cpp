#include <fftw3.h>

#include <climits>
#include <complex>
#include <mutex>
#include <string>

#include "core/error.hpp"
#include "core/fftw_planner.hpp"
#include "display/cpu/display_cpu.hpp"
#include "display/scaling.hpp"

namespace qgpu::display::cpu {

std::vector<float> fft_log_magnitude(const float* data, std::size_t rows, std::size_t cols) {
  if (rows > static_cast<std::size_t>(INT_MAX) || cols > static_cast<std::size_t>(INT_MAX))
    throw InvalidArgument("fft_log_magnitude: " + std::to_string(rows) + "x" + std::to_string(cols) +
                          " exceeds FFTW's int sizes");
  const std::size_t n = rows * cols;
  std::vector<std::complex<float>> buf(n);  // layout-compatible with fftwf_complex (FFTW manual 4.1.1)
  for (std::size_t i = 0; i < n; ++i) buf[i] = {data[i], 0.0f};
  auto* c = reinterpret_cast<fftwf_complex*>(buf.data());
  fftwf_plan plan;
  {
    std::lock_guard<std::mutex> lock(fftw_planner_mutex());
    plan = fftwf_plan_dft_2d(static_cast<int>(rows), static_cast<int>(cols), c, c, FFTW_FORWARD, FFTW_ESTIMATE);
  }
  if (!plan) throw Error("FFTW could not plan a " + std::to_string(rows) + "x" + std::to_string(cols) + " FFT");
  fftwf_execute(plan);
  {
    std::lock_guard<std::mutex> lock(fftw_planner_mutex());
    fftwf_destroy_plan(plan);
  }
  // fftshift: output (r, c) holds frequency ((r - rows/2) mod rows, (c - cols/2) mod cols), as numpy.fft.fftshift.
  std::vector<float> out(n);
  for (std::size_t r = 0; r < rows; ++r) {
    const std::size_t sr = (r + rows - rows / 2) % rows;
    for (std::size_t col = 0; col < cols; ++col) {
      const std::complex<float> x = buf[sr * cols + (col + cols - cols / 2) % cols];
      out[r * cols + col] = fft_display_value(x.real(), x.imag());
    }
  }
  return out;
}

}  // namespace qgpu::display::cpu
