// Fourier integration on the GPU: the gradients uploaded unpadded, extended (mirror / zeros) by a kernel, cuFFT r2c
// of both components, the shared k-space filter in a kernel, c2r, the source region cropped by a kernel and
// downloaded. Device buffers and plans come from the process-wide pools (device/cuda/buffer_pool.hpp,
// cufft_plans.hpp): a repeated request of one size allocates nothing.
#include <cuda_runtime.h>
#include <cufft.h>

#include <algorithm>
#include <string>

#include "core/result_memory.hpp"
#include "core/error.hpp"
#include "core/host_bytes.hpp"
#include "core/stage_timing.hpp"
#include "device/cuda/buffer_pool.hpp"
#include "device/cuda/cuda_check.hpp"
#include "device/cuda/cufft_check.hpp"
#include "device/cuda/cufft_plans.hpp"
#include "device/cuda/launch.hpp"
#include "dpc/idpc_backend.hpp"

namespace qgpu::dpc::detail {

namespace {

constexpr unsigned kThreads = 256;

unsigned blocks_for(std::size_t n) { return grid_blocks(n, kThreads, 65535); }  // grid-stride kernels

// out_row / out_col (padded nr x nc) <- the periodic extension of the rows x cols source (padded_value).
__global__ void idpc_pad_kernel(const float* __restrict__ grad_row, const float* __restrict__ grad_col,
                                std::size_t rows, std::size_t cols, std::size_t pad_row, std::size_t pad_col,
                                bool mirror, std::size_t nr, std::size_t nc, float* __restrict__ out_row,
                                float* __restrict__ out_col) {
  const std::size_t total = nr * nc;
  for (std::size_t k = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; k < total;
       k += std::size_t(gridDim.x) * blockDim.x) {
    float a, b;
    padded_value(grad_row, grad_col, rows, cols, pad_row, pad_col, mirror, k / nc, k % nc, a, b);
    out_row[k] = a;
    out_col[k] = b;
  }
}

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

// out (rows x cols) <- phi (nr x nc) at (pad_row, pad_col).
__global__ void idpc_crop_kernel(const float* __restrict__ phi, std::size_t nc, std::size_t pad_row,
                                 std::size_t pad_col, std::size_t rows, std::size_t cols, float* __restrict__ out) {
  const std::size_t total = rows * cols;
  for (std::size_t k = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; k < total;
       k += std::size_t(gridDim.x) * blockDim.x)
    out[k] = phi[(k / cols + pad_row) * nc + k % cols + pad_col];
}

}  // namespace

std::vector<float> integrate_cufft(const PaddedField& f) {
  const std::size_t nr = f.padded_rows, nc = f.padded_cols, nch = nc / 2 + 1, n = nr * nc;
  const std::size_t src = f.rows * f.cols;
  // Separate buffers keep every cuFFT operand at cudaMalloc alignment. The source buffers take the cropped result;
  // the padded row component's buffer takes the inverse transform.
  LeasedBuffer d_src_row(src * sizeof(float)), d_src_col(src * sizeof(float));
  LeasedBuffer d_grad_row(n * sizeof(float)), d_grad_col(n * sizeof(float));
  LeasedBuffer d_spec_row(nr * nch * sizeof(cufftComplex)), d_spec_col(nr * nch * sizeof(cufftComplex));
  const LeasedPlan forward(int(nr), int(nc), CUFFT_R2C), inverse(int(nr), int(nc), CUFFT_C2R);
  {
    const timing::Stage stage("transfer");
    d_src_row.buffer().upload(f.grad_row, src * sizeof(float));
    d_src_col.buffer().upload(f.grad_col, src * sizeof(float));
  }
  {
    const timing::Stage stage("compute");
    float* grad_row = d_grad_row.as<float>();
    float* grad_col = d_grad_col.as<float>();
    cufftComplex* spec_row = d_spec_row.as<cufftComplex>();
    cufftComplex* spec_col = d_spec_col.as<cufftComplex>();
    idpc_pad_kernel<<<blocks_for(n), kThreads>>>(d_src_row.as<float>(), d_src_col.as<float>(), f.rows, f.cols,
                                                 f.pad_row, f.pad_col, f.mirror, nr, nc, grad_row, grad_col);
    QGPU_CUDA_LAUNCHED("idpc_pad_kernel");
    QGPU_CUFFT(cufftExecR2C(forward.get(), grad_row, spec_row));
    QGPU_CUFFT(cufftExecR2C(forward.get(), grad_col, spec_col));
    idpc_filter_kernel<<<blocks_for(nr * nch), kThreads>>>(spec_row, spec_col, nr, nc, float(f.step_row),
                                                          float(f.step_col), float(1.0 / double(n)));
    QGPU_CUDA_LAUNCHED("idpc_filter_kernel");
    QGPU_CUFFT(cufftExecC2R(inverse.get(), spec_row, grad_row));
    idpc_crop_kernel<<<blocks_for(src), kThreads>>>(grad_row, nc, f.pad_row, f.pad_col, f.rows, f.cols,
                                                   d_src_row.as<float>());
    QGPU_CUDA_LAUNCHED("idpc_crop_kernel");
    QGPU_CUDA(cudaDeviceSynchronize());
  }
  const timing::Stage stage("transfer");
  std::vector<float> phi = result_vector<float>(src);  // given-back memory, or fresh with huge pages
  d_src_row.buffer().download(phi.data(), src * sizeof(float));
  return phi;
}

}  // namespace qgpu::dpc::detail
