// Fourier integration on the GPU: the gradients uploaded unpadded (or made from CoM maps already there), extended
// (mirror / zeros) by a kernel that also checks they are finite, cuFFT r2c
// of both components, the shared k-space filter in a kernel, c2r, the source region cropped by a kernel and
// downloaded. Device buffers and plans come from the process-wide pools (device/cuda/buffer_pool.hpp,
// cufft_plans.hpp): a repeated request of one size allocates nothing.
#include <cuda_runtime.h>
#include <cufft.h>

#include <algorithm>
#include <exception>
#include <string>
#include <thread>

#include "core/result_memory.hpp"
#include "core/error.hpp"
#include "core/host_bytes.hpp"
#include "core/parallel_for.hpp"
#include "core/stage_timing.hpp"
#include "device/cuda/buffer_pool.hpp"
#include "device/cuda/device_buffer.hpp"
#include "device/cuda/cuda_check.hpp"
#include "device/cuda/cufft_check.hpp"
#include "device/cuda/cufft_plans.hpp"
#include "device/cuda/launch.hpp"
#include "dpc/com_math.hpp"
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

struct RotatedArraySource {  // two arrays of a centred DPC, rotated (rotate_field's arithmetic)
  const float* row;
  const float* col;
  double cos, sin;
  bool transpose;
  __device__ void operator()(std::size_t i, float& a, float& b) const {
    const float dr = row[i], dc = col[i];
    rotated_value(transpose ? dc : dr, transpose ? dr : dc, cos, sin, a, b);
  }
};

struct ComFieldSource {
  DeviceComField f;
  const double* mean = nullptr;  // [row, col] when f.mean_reference (com_mean_kernel)
  __device__ void operator()(std::size_t i, float& a, float& b) const {
    const double ref_row = mean ? mean[0] : f.ref_row, ref_col = mean ? mean[1] : f.ref_col;
    const float dr = centred_value(f.com_row[i], ref_row), dc = centred_value(f.com_col[i], ref_col);
    rotated_value(f.transpose ? dc : dr, f.transpose ? dr : dc, f.cos, f.sin, a, b);
  }
};

// The mean of both maps in mean_com's order (dpc/com.cpp): each block of kHostBlock values summed in order in double
// by one thread, then the block sums in order by one thread, divided by n: the host's bits. One CUDA block per host
// block and component: its other warps stage the next tile of values in shared memory (coalesced) while thread 0
// adds the current one (a chain of dependent adds; loading its own values one by one took ~5 ms at 4096x4096).
constexpr unsigned kMeanTile = 2048;

__global__ void __launch_bounds__(256) com_mean_blocks_kernel(const float* row, const float* col, std::size_t n,
                                                              std::size_t blocks, double* partial) {
  __shared__ float tile[2][kMeanTile];
  const std::size_t k = blockIdx.x;  // [0, blocks): row, [blocks, 2 blocks): col
  const float* src = k < blocks ? row : col;
  const std::size_t begin = (k % blocks) * kHostBlock, end = std::min(n, begin + kHostBlock);
  const std::size_t tiles = (end - begin + kMeanTile - 1) / kMeanTile;
  const auto load = [&](std::size_t t, unsigned first, unsigned threads) {
    const std::size_t base = begin + t * kMeanTile;
    for (unsigned j = threadIdx.x - first; j < kMeanTile; j += threads) {
      const std::size_t i = base + j;
      tile[t & 1][j] = i < end ? src[i] : 0.0f;
    }
  };
  load(0, 0, blockDim.x);
  __syncthreads();
  double sum = 0;
  for (std::size_t t = 0; t < tiles; ++t) {
    if (threadIdx.x >= 32) {
      if (t + 1 < tiles) load(t + 1, 32, blockDim.x - 32);
    } else if (threadIdx.x == 0) {
      const std::size_t m = std::min<std::size_t>(kMeanTile, end - begin - t * kMeanTile);
      for (std::size_t j = 0; j < m; ++j) sum += tile[t & 1][j];
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) partial[k] = sum;
}

__global__ void com_mean_finish_kernel(const double* partial, std::size_t n, std::size_t blocks, double* mean) {
  if (blockIdx.x != 0 || threadIdx.x != 0) return;
  double sr = 0, sc = 0;
  for (std::size_t k = 0; k < blocks; ++k) {
    sr += partial[k];
    sc += partial[blocks + k];
  }
  mean[0] = sr / double(n);
  mean[1] = sc / double(n);
}

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

// The device memory and plans of one integration, held until its work has ended.
struct Integration {
  explicit Integration(const PaddedField& f)
      : n(f.padded_rows * f.padded_cols),
        nch(f.padded_cols / 2 + 1),
        grad_row(n * sizeof(float)),
        grad_col(n * sizeof(float)),
        spec_row(f.padded_rows * nch * sizeof(cufftComplex)),
        spec_col(f.padded_rows * nch * sizeof(cufftComplex)),
        forward(int(f.padded_rows), int(f.padded_cols), CUFFT_R2C),
        inverse(int(f.padded_rows), int(f.padded_cols), CUFFT_C2R) {}
  std::size_t n, nch;
  // Separate buffers keep every cuFFT operand at cudaMalloc alignment; the padded row component's buffer takes the
  // inverse transform.
  LeasedBuffer grad_row, grad_col, spec_row, spec_col;
  LeasedPlan forward, inverse;
};

// The padded field from `source`, both forward transforms, the filter, the inverse and the crop, queued on `stream`;
// the potential (rows x cols) ends in `out`, the non-finite flag in `nonfinite` (zeroed here).
template <class Source>
void queue_integration(Integration& w, const Source& source, const PaddedField& f, float* out, int* nonfinite,
                       cudaStream_t stream) {
  const std::size_t nr = f.padded_rows, nc = f.padded_cols, n = w.n, src = f.rows * f.cols;
  float* grad_row = w.grad_row.as<float>();
  float* grad_col = w.grad_col.as<float>();
  cufftComplex* spec_row = w.spec_row.as<cufftComplex>();
  cufftComplex* spec_col = w.spec_col.as<cufftComplex>();
  QGPU_CUFFT(cufftSetStream(w.forward.get(), stream));
  QGPU_CUFFT(cufftSetStream(w.inverse.get(), stream));
  QGPU_CUDA(cudaMemsetAsync(nonfinite, 0, sizeof(int), stream));
  idpc_pad_kernel<<<blocks_for(n), kThreads, 0, stream>>>(source, f.rows, f.cols, f.pad_row, f.pad_col, f.mirror, nr,
                                                          nc, grad_row, grad_col, nonfinite);
  QGPU_CUDA_LAUNCHED("idpc_pad_kernel");
  QGPU_CUFFT(cufftExecR2C(w.forward.get(), grad_row, spec_row));
  QGPU_CUFFT(cufftExecR2C(w.forward.get(), grad_col, spec_col));
  idpc_filter_kernel<<<blocks_for(nr * w.nch), kThreads, 0, stream>>>(spec_row, spec_col, nr, nc, float(f.step_row),
                                                                     float(f.step_col), float(1.0 / double(n)));
  QGPU_CUDA_LAUNCHED("idpc_filter_kernel");
  QGPU_CUFFT(cufftExecC2R(w.inverse.get(), spec_row, grad_row));
  idpc_crop_kernel<<<blocks_for(src), kThreads, 0, stream>>>(grad_row, nc, f.pad_row, f.pad_col, f.rows, f.cols, out);
  QGPU_CUDA_LAUNCHED("idpc_crop_kernel");
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
  Integration w(f);
  {
    const timing::Stage stage("transfer");
    d_src_row.buffer().upload(f.grad_row, src * sizeof(float));
    d_src_col.buffer().upload(f.grad_col, src * sizeof(float));
  }
  {
    const timing::Stage stage("compute");
    if (f.rotate)
      queue_integration(w, RotatedArraySource{d_src_row.as<float>(), d_src_col.as<float>(), f.cos, f.sin, f.transpose},
                        f, d_src_row.as<float>(), d_flag.as<int>(), nullptr);
    else
      queue_integration(w, ArraySource{d_src_row.as<float>(), d_src_col.as<float>()}, f, d_src_row.as<float>(),
                        d_flag.as<int>(), nullptr);  // the legacy default stream
  }
  return finish_integration(f, d_src_row.as<float>(), d_flag.as<int>());
}

namespace {

// A non-blocking stream and its events for one chain; the stream is waited for before any of it goes.
struct ChainStream {
  cudaStream_t s = nullptr;
  cudaEvent_t maps_ready = nullptr, mean_ready = nullptr;
  Integration* w = nullptr;
  ChainStream() {
    QGPU_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    QGPU_CUDA(cudaEventCreateWithFlags(&maps_ready, cudaEventDisableTiming));
    QGPU_CUDA(cudaEventCreateWithFlags(&mean_ready, cudaEventDisableTiming));
  }
  ~ChainStream() {
    cudaStreamSynchronize(s);  // nothing of it left in flight (into buffers and plans going back to their pools)
    if (w) {  // the plans go back to the pool on the default stream
      cufftSetStream(w->forward.get(), nullptr);
      cufftSetStream(w->inverse.get(), nullptr);
    }
    cudaEventDestroy(maps_ready);
    cudaEventDestroy(mean_ready);
    cudaStreamDestroy(s);
  }
  ChainStream(const ChainStream&) = delete;
  ChainStream& operator=(const ChainStream&) = delete;
};

}  // namespace

std::vector<float> integrate_cufft_com(const DeviceComField& field, const PaddedField& f,
                                       const std::function<void(const ReferenceGetter&)>& host_side) {
  const std::size_t n = f.rows * f.cols, blocks = (n + kHostBlock - 1) / kHostBlock;
  LeasedBuffer d_out(n * sizeof(float)), d_flag(sizeof(int)), d_mean((2 * blocks + 2) * sizeof(double));
  Integration w(f);  // declared before the stream: its memory outlives the stream's work
  ChainStream cs;
  cs.w = &w;
  double* const mean = d_mean.as<double>() + 2 * blocks;
  {
    const timing::Stage stage("compute");
    // after the maps were made on the legacy default stream; the caller's downloads (blocking streams) do not wait
    // for this stream's work
    QGPU_CUDA(cudaEventRecord(cs.maps_ready, nullptr));
    QGPU_CUDA(cudaStreamWaitEvent(cs.s, cs.maps_ready, 0));
    if (field.mean_reference) {
      com_mean_blocks_kernel<<<unsigned(2 * blocks), 256, 0, cs.s>>>(field.com_row, field.com_col, n, blocks,
                                                                      d_mean.as<double>());
      QGPU_CUDA_LAUNCHED("com_mean_blocks_kernel");
      com_mean_finish_kernel<<<1, 1, 0, cs.s>>>(d_mean.as<double>(), n, blocks, mean);
      QGPU_CUDA_LAUNCHED("com_mean_finish_kernel");
    }
    QGPU_CUDA(cudaEventRecord(cs.mean_ready, cs.s));
    queue_integration(w, ComFieldSource{field, field.mean_reference ? mean : nullptr}, f, d_out.as<float>(),
                      d_flag.as<int>(), cs.s);
  }
  const ReferenceGetter reference = [&]() -> std::pair<double, double> {
    if (!field.mean_reference) return {field.ref_row, field.ref_col};
    double m[2];
    QGPU_CUDA(cudaEventSynchronize(cs.mean_ready));
    QGPU_CUDA(cudaMemcpy(m, mean, sizeof(m), cudaMemcpyDeviceToHost));
    return {m[0], m[1]};
  };
  int device = 0;
  QGPU_CUDA(cudaGetDevice(&device));
  std::exception_ptr host_error, gpu_error;
  std::thread host([&] {
    try {
      QGPU_CUDA(cudaSetDevice(device));
      host_side(reference);
    } catch (...) {
      host_error = std::current_exception();
    }
  });
  std::vector<float> phi;
  try {
    {
      const timing::Stage stage("compute");
      QGPU_CUDA(cudaStreamSynchronize(cs.s));
    }
    phi = finish_integration(f, d_out.as<float>(), d_flag.as<int>());
  } catch (...) {
    gpu_error = std::current_exception();
  }
  host.join();
  if (host_error) std::rethrow_exception(host_error);
  if (gpu_error) std::rethrow_exception(gpu_error);
  return phi;
}

}  // namespace qgpu::dpc::detail
