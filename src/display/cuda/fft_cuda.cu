#include <cufft.h>

#include "device/cuda/cuda_check.hpp"
#include "device/cuda/cufft_check.hpp"
#include "device/cuda/cufft_handle.hpp"
#include "device/cuda/device_buffer.hpp"
#include "display/cuda/display_cuda.hpp"
#include "display/cuda/launch.hpp"
#include "display/scaling.hpp"

namespace qgpu::display::cuda {

namespace {

__global__ void to_complex_kernel(const float* in, std::size_t n, cufftComplex* out) {
  for (std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x)
    out[i] = make_cuFloatComplex(in[i], 0.0f);
}

// Output (r, c) holds frequency ((r - rows/2) mod rows, (c - cols/2) mod cols), as numpy.fft.fftshift.
__global__ void shifted_log_magnitude_kernel(const cufftComplex* x, std::size_t rows, std::size_t cols, float* out) {
  const std::size_t n = rows * cols;
  for (std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x) {
    const std::size_t r = i / cols, c = i % cols;
    const cufftComplex v = x[((r + rows - rows / 2) % rows) * cols + (c + cols - cols / 2) % cols];
    out[i] = fft_display_value(v.x, v.y);
  }
}

// Forward, unnormalised, in place, on the legacy default stream like the kernels. The plan must outlive the
// asynchronous execution. A 2D DFT with a length-1 axis is the 1D DFT of the other axis (planned as 1D: cuFFT
// wants lengths of at least 2), and a 1x1 DFT is the identity.
void forward_fft(CufftHandle& plan, cufftComplex* d, std::size_t rows, std::size_t cols) {
  if (rows == 1 && cols == 1) return;
  if (rows == 1 || cols == 1)
    QGPU_CUFFT(cufftPlan1d(&plan.h, static_cast<int>(rows * cols), CUFFT_C2C, 1));
  else
    QGPU_CUFFT(cufftPlan2d(&plan.h, static_cast<int>(rows), static_cast<int>(cols), CUFFT_C2C));
  plan.made = true;
  QGPU_CUFFT(cufftExecC2C(plan.h, d, d, CUFFT_FORWARD));
}

}  // namespace

std::vector<float> fft_log_magnitude(const float* data, std::size_t rows, std::size_t cols) {
  const std::size_t n = rows * cols;
  require_int_size(n, "fft_log_magnitude: pixel count");
  DeviceBuffer d_in(n * sizeof(float)), d_c(n * sizeof(cufftComplex)), d_out(n * sizeof(float));
  d_in.upload(data, n * sizeof(float));
  to_complex_kernel<<<blocks_for(n), kThreads>>>(d_in.as<float>(), n, d_c.as<cufftComplex>());
  QGPU_CUDA_LAUNCHED("display to_complex_kernel");
  CufftHandle plan;  // destroyed after the synchronous download below
  forward_fft(plan, d_c.as<cufftComplex>(), rows, cols);
  shifted_log_magnitude_kernel<<<blocks_for(n), kThreads>>>(d_c.as<cufftComplex>(), rows, cols, d_out.as<float>());
  QGPU_CUDA_LAUNCHED("display shifted_log_magnitude_kernel");
  std::vector<float> out(n);
  d_out.download(out.data(), n * sizeof(float));
  return out;
}

}  // namespace qgpu::display::cuda
