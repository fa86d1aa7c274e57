#include "device/cuda/cuda_check.hpp"
#include "device/cuda/buffer_pool.hpp"
#include "display/cuda/display_cuda.hpp"
#include "display/cuda/launch.hpp"
#include "display/cuda/range_cuda.hpp"
#include "display/scaling.hpp"

namespace qgpu::display::cuda {

namespace {

__global__ void render_kernel(const float* in, std::size_t n, Scale scale, double lo, double hi, const uchar4* lut,
                              uchar4* out) {
  __shared__ uchar4 table[256];
  for (unsigned i = threadIdx.x; i < 256; i += blockDim.x) table[i] = lut[i];
  __syncthreads();
  for (std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x) {
    const float v = in[i];
    out[i] = is_finite(v) ? table[color_index(scale_value(v, scale), lo, hi)] : make_uchar4(0, 0, 0, 0);
  }
}

// Colormap indices (render_kernel without the LUT); non-finite pixels get 0 and are counted.
__global__ void index_kernel(const float* in, std::size_t n, Scale scale, double lo, double hi, std::uint8_t* out,
                             unsigned long long* transparent) {
  unsigned none = 0;
  for (std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x) {
    const float v = in[i];
    const bool finite = is_finite(v);
    out[i] = finite ? std::uint8_t(color_index(scale_value(v, scale), lo, hi)) : std::uint8_t(0);
    none += !finite;
  }
  if (none) atomicAdd(transparent, static_cast<unsigned long long>(none));
}

__global__ void counts_to_float(const unsigned long long* in, std::size_t n, float* out) {
  for (std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x)
    out[i] = __ull2float_rn(in[i]);  // round to nearest even: the host's float(std::uint64_t)
}

// The indices of the float values at d_in (device), downloaded into index.
Range index_on_device(const float* d_in, std::size_t n, const DisplayOptions& o, std::uint8_t* index,
                      std::size_t* transparent) {
  LeasedBuffer d_out(n), d_count(sizeof(unsigned long long));
  QGPU_CUDA(cudaMemset(d_count.data(), 0, sizeof(unsigned long long)));
  const Range r = find_range_on_device(d_in, n, o);
  index_kernel<<<blocks_for(n), kThreads>>>(d_in, n, o.scale, r.lo, r.hi, d_out.as<std::uint8_t>(),
                                            d_count.as<unsigned long long>());
  QGPU_CUDA_LAUNCHED("display index_kernel");
  d_out.buffer().download(index, n);
  unsigned long long none = 0;
  d_count.buffer().download(&none, sizeof none);
  *transparent = std::size_t(none);
  return r;
}

}  // namespace

Range render_indexed(const float* data, std::size_t n, const DisplayOptions& o, std::uint8_t* index,
                     std::size_t* transparent) {
  LeasedBuffer d_in(n * sizeof(float));
  d_in.buffer().upload(data, n * sizeof(float));
  return index_on_device(d_in.as<float>(), n, o, index, transparent);
}

Range render_indexed(const std::uint64_t* data, std::size_t n, const DisplayOptions& o, std::uint8_t* index,
                     std::size_t* transparent) {
  LeasedBuffer d_counts(n * sizeof(std::uint64_t)), d_in(n * sizeof(float));
  d_counts.buffer().upload(data, n * sizeof(std::uint64_t));
  counts_to_float<<<blocks_for(n), kThreads>>>(d_counts.as<unsigned long long>(), n, d_in.as<float>());
  QGPU_CUDA_LAUNCHED("display counts_to_float");
  return index_on_device(d_in.as<float>(), n, o, index, transparent);
}

Range render(const float* data, std::size_t n, const DisplayOptions& o, const Lut& lut, std::uint8_t* rgba) {
  // Pooled (device/cuda/buffer_pool.hpp): a service rendering PNGs of one size allocates nothing per request.
  LeasedBuffer d_in(n * sizeof(float)), d_lut(lut.size()), d_out(n * 4);
  d_in.buffer().upload(data, n * sizeof(float));
  d_lut.buffer().upload(lut.data(), lut.size());
  const Range r = find_range_on_device(d_in.as<float>(), n, o);
  render_kernel<<<blocks_for(n), kThreads>>>(d_in.as<float>(), n, o.scale, r.lo, r.hi, d_lut.as<uchar4>(),
                                             d_out.as<uchar4>());
  QGPU_CUDA_LAUNCHED("display render_kernel");
  d_out.buffer().download(rgba, n * 4);
  return r;
}

}  // namespace qgpu::display::cuda
