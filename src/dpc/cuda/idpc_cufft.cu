// Fourier integration on the GPU: the gradients uploaded unpadded (or made from CoM maps already there), extended
// (mirror / zeros) by a kernel that also checks they are finite, cuFFT r2c
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
#include "device/cuda/device_buffer.hpp"
#include "device/cuda/cuda_check.hpp"
#include "device/cuda/cufft_check.hpp"
#include "device/cuda/cufft_plans.hpp"
#include "device/cuda/launch.hpp"
#include "dpc/idpc_backend.hpp"

namespace qgpu::dpc::detail {

namespace {

constexpr unsigned kThreads = 256;

unsigned blocks_for(std::size_t n) { return grid_blocks(n, kThreads, 65535); }  // grid-stride kernels

// The field at source position i: two arrays (the uploaded gradients), or the rotated centred DPC of CoM maps on the
// GPU (DeviceComField's arithmetic: the host's centered_dpc and rotate_field, built with -fmad=false: the same bits).
struct ArraySource {
  const float* row;
  const float* col;
  __device__ void operator()(std::size_t i, float& a, float& b) const {
    a = row[i];
    b = col[i];
  }
};

struct ComFieldSource {
  DeviceComField f;
  __device__ void operator()(std::size_t i, float& a, float& b) const {
    const float dr = static_cast<float>(double(f.com_row[i]) - f.ref_row);
    const float dc = static_cast<float>(double(f.com_col[i]) - f.ref_col);
    const float fr = f.transpose ? dc : dr, fc = f.transpose ? dr : dc;
    a = static_cast<float>(f.cos * fr - f.sin * fc);
    b = static_cast<float>(f.sin * fr + f.cos * fc);
  }
};

// out_row / out_col (padded nr x nc) <- the periodic extension of the rows x cols source (padded_value's rule);
// *nonfinite set when a source value is not finite.
template <class Source>
__global__ void idpc_pad_kernel(Source source, std::size_t rows, std::size_t cols, std::size_t pad_row,
                                std::size_t pad_col, bool mirror, std::size_t nr, std::size_t nc,
                                float* __restrict__ out_row, float* __restrict__ out_col, int* nonfinite) {
  const std::size_t total = nr * nc;
  bool bad = false;
  for (std::size_t k = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; k < total;
       k += std::size_t(gridDim.x) * blockDim.x) {
    int sign_r, sign_c;
    const std::size_t r = padded_source(k / nc, pad_row, rows, mirror, sign_r);
    const std::size_t c = padded_source(k % nc, pad_col, cols, mirror, sign_c);
    float a = 0.0f, b = 0.0f;
    if (sign_r != 0 && sign_c != 0) {
      source(r * cols + c, a, b);
      bad |= !isfinite(a) || !isfinite(b);
      if (sign_r < 0) a = -a;
      if (sign_c < 0) b = -b;
    }
    out_row[k] = a;
    out_col[k] = b;
  }
  if (bad) atomicExch(nonfinite, 1);
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

// The padded field from `source`, both forward transforms, the filter, the inverse and the crop, queued on the legacy
// default stream; the potential (rows x cols) ends in `out`, the non-finite flag in `nonfinite` (zeroed here).
template <class Source>
void queue_integration(const Source& source, const PaddedField& f, float* out, int* nonfinite) {
  const std::size_t nr = f.padded_rows, nc = f.padded_cols, nch = nc / 2 + 1, n = nr * nc;
  const std::size_t src = f.rows * f.cols;
  // Separate buffers keep every cuFFT operand at cudaMalloc alignment; the padded row component's buffer takes the
  // inverse transform.
  LeasedBuffer d_grad_row(n * sizeof(float)), d_grad_col(n * sizeof(float));
  LeasedBuffer d_spec_row(nr * nch * sizeof(cufftComplex)), d_spec_col(nr * nch * sizeof(cufftComplex));
  const LeasedPlan forward(int(nr), int(nc), CUFFT_R2C), inverse(int(nr), int(nc), CUFFT_C2R);
  float* grad_row = d_grad_row.as<float>();
  float* grad_col = d_grad_col.as<float>();
  cufftComplex* spec_row = d_spec_row.as<cufftComplex>();
  cufftComplex* spec_col = d_spec_col.as<cufftComplex>();
  QGPU_CUDA(cudaMemsetAsync(nonfinite, 0, sizeof(int)));
  idpc_pad_kernel<<<blocks_for(n), kThreads>>>(source, f.rows, f.cols, f.pad_row, f.pad_col, f.mirror, nr, nc,
                                               grad_row, grad_col, nonfinite);
  QGPU_CUDA_LAUNCHED("idpc_pad_kernel");
  QGPU_CUFFT(cufftExecR2C(forward.get(), grad_row, spec_row));
  QGPU_CUFFT(cufftExecR2C(forward.get(), grad_col, spec_col));
  idpc_filter_kernel<<<blocks_for(nr * nch), kThreads>>>(spec_row, spec_col, nr, nc, float(f.step_row),
                                                        float(f.step_col), float(1.0 / double(n)));
  QGPU_CUDA_LAUNCHED("idpc_filter_kernel");
  QGPU_CUFFT(cufftExecC2R(inverse.get(), spec_row, grad_row));
  idpc_crop_kernel<<<blocks_for(src), kThreads>>>(grad_row, nc, f.pad_row, f.pad_col, f.rows, f.cols, out);
  QGPU_CUDA_LAUNCHED("idpc_crop_kernel");
  // The leased buffers and plans go back to their pools here with the work still queued: their next user queues
  // on the same legacy default stream, after it.
}

// Waits for the queued integration, checks its flag and brings the potential to the host.
std::vector<float> finish_integration(const PaddedField& f, const float* out, const int* nonfinite) {
  int bad = 0;
  {
    const timing::Stage stage("compute");
    QGPU_CUDA(cudaMemcpy(&bad, nonfinite, sizeof(int), cudaMemcpyDeviceToHost));  // waits for the queued work
  }
  if (bad) throw InvalidArgument("idpc: gradient maps hold non-finite values");
  const timing::Stage stage("transfer");
  const std::size_t src = f.rows * f.cols;
  std::vector<float> phi = result_vector<float>(src);  // given-back memory, or fresh with huge pages
  download_bytes(phi.data(), out, src * sizeof(float));
  return phi;
}

}  // namespace

std::vector<float> integrate_cufft(const PaddedField& f) {
  const std::size_t src = f.rows * f.cols;
  // The source buffers take the gradients, then the row one the cropped result.
  LeasedBuffer d_src_row(src * sizeof(float)), d_src_col(src * sizeof(float)), d_flag(sizeof(int));
  {
    const timing::Stage stage("transfer");
    d_src_row.buffer().upload(f.grad_row, src * sizeof(float));
    d_src_col.buffer().upload(f.grad_col, src * sizeof(float));
  }
  {
    const timing::Stage stage("compute");
    queue_integration(ArraySource{d_src_row.as<float>(), d_src_col.as<float>()}, f, d_src_row.as<float>(),
                      d_flag.as<int>());
  }
  return finish_integration(f, d_src_row.as<float>(), d_flag.as<int>());
}

std::vector<float> integrate_cufft_com(const DeviceComField& field, const PaddedField& f,
                                       const std::function<void()>& meanwhile) {
  LeasedBuffer d_out(f.rows * f.cols * sizeof(float)), d_flag(sizeof(int));
  {
    const timing::Stage stage("compute");
    queue_integration(ComFieldSource{field}, f, d_out.as<float>(), d_flag.as<int>());
  }
  try {
    meanwhile();
  } catch (...) {
    cudaDeviceSynchronize();  // the queued work ends before its buffers can go to another user's stream
    throw;
  }
  return finish_integration(f, d_out.as<float>(), d_flag.as<int>());
}

}  // namespace qgpu::dpc::detail
