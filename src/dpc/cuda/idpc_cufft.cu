// Fourier integration on the GPU: cuFFT r2c of both components, the shared k-space filter in a kernel, c2r.
#include <cuda_runtime.h>
#include <cufft.h>

#include <algorithm>
#include <string>

#include "core/error.hpp"
#include "device/cuda/cuda_check.hpp"
#include "device/cuda/cufft_check.hpp"
#include "device/cuda/cufft_plans.hpp"
#include "device/cuda/device_buffer.hpp"
#include "dpc/idpc_backend.hpp"

namespace qgpu::dpc::detail {

namespace {

// spec_row <- filter(spec_row, spec_col), over the nr x (nc/2 + 1) half spectrum.
__global__ void idpc_filter_kernel(cufftComplex* spec_row, const cufftComplex* spec_col, std::size_t nr,
                                   std::size_t nc, float step_row, float step_col, float scale) {
  const std::size_t nch = nc / 2 + 1, total = nr * nch;
  for (std::size_t k = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; k < total;
       k += std::size_t(gridDim.x) * blockDim.x) {
    const std::size_t i = k / nch, j = k % nch;
    const cufftComplex a = spec_row[k], b = spec_col[k];
    float re, im;
    idpc_coefficient<float>(i, j, nr, nc, step_row, step_col, scale, a.x, a.y, b.x, b.y, re, im);
    spec_row[k] = make_cuComplex(re, im);
  }
}

}  // namespace

std::vector<float> integrate_cufft(const PeriodicField& f) {
  const std::size_t nr = f.rows, nc = f.cols, nch = nc / 2 + 1, n = nr * nc;
  // Separate allocations keep every cuFFT operand at cudaMalloc alignment.
  DeviceBuffer d_grad_row(n * sizeof(float)), d_grad_col(n * sizeof(float)), d_phi(n * sizeof(float));
  DeviceBuffer d_spec_row(nr * nch * sizeof(cufftComplex)), d_spec_col(nr * nch * sizeof(cufftComplex));
  d_grad_row.upload(f.grad_row.data(), n * sizeof(float));
  d_grad_col.upload(f.grad_col.data(), n * sizeof(float));
  float* grad_row = d_grad_row.as<float>();
  float* grad_col = d_grad_col.as<float>();
  cufftComplex* spec_row = d_spec_row.as<cufftComplex>();
  cufftComplex* spec_col = d_spec_col.as<cufftComplex>();

  const cufftHandle forward = cached_plan_2d(int(nr), int(nc), CUFFT_R2C);
  const cufftHandle inverse = cached_plan_2d(int(nr), int(nc), CUFFT_C2R);
  QGPU_CUFFT(cufftExecR2C(forward, grad_row, spec_row));
  QGPU_CUFFT(cufftExecR2C(forward, grad_col, spec_col));

  const unsigned threads = 256;
  const std::size_t blocks = std::min<std::size_t>((nr * nch + threads - 1) / threads, 65535);
  idpc_filter_kernel<<<unsigned(blocks), threads>>>(spec_row, spec_col, nr, nc, float(f.step_row),
                                                    float(f.step_col), float(1.0 / double(n)));
  QGPU_CUDA_LAUNCHED("idpc_filter_kernel");
  QGPU_CUFFT(cufftExecC2R(inverse, spec_row, d_phi.as<float>()));
  QGPU_CUDA(cudaDeviceSynchronize());

  std::vector<float> phi(n);
  d_phi.download(phi.data(), n * sizeof(float));
  return phi;
}

}  // namespace qgpu::dpc::detail
