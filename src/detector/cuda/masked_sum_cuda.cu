#include <algorithm>
#include <memory>

#include "detector/cuda/masked_sum_cuda.hpp"
#include "device/cuda/cuda_check.hpp"

namespace qgpu::detector::cuda {

namespace {

constexpr int kThreads = 256;

__device__ __forceinline__ std::uint64_t warp_sum(std::uint64_t v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
  return v;
}

template <int N> __device__ __forceinline__ std::uint64_t block_sum(std::uint64_t v) {
  __shared__ std::uint64_t part[N / 32];
  v = warp_sum(v);
  if ((threadIdx.x & 31) == 0) part[threadIdx.x >> 5] = v;
  __syncthreads();
  std::uint64_t t = 0;
  if (threadIdx.x < 32) {
    t = threadIdx.x < N / 32 ? part[threadIdx.x] : 0;
    t = warp_sum(t);
  }
  __syncthreads();
  return t;  // valid in thread 0
}

// Sum of the T lanes packed in a 16-byte word.
template <class T> __device__ __forceinline__ std::uint32_t lanes_sum(uint4 v) {
  const std::uint32_t w[4] = {v.x, v.y, v.z, v.w};
  std::uint32_t s = 0;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    if constexpr (sizeof(T) == 1)
      s += (w[i] & 0xff) + ((w[i] >> 8) & 0xff) + ((w[i] >> 16) & 0xff) + (w[i] >> 24);
    else if constexpr (sizeof(T) == 2)
      s += (w[i] & 0xffff) + (w[i] >> 16);
    else
      s += 0;  // uint32 lanes are summed in 64 bits by the caller
  }
  return s;
}

// One block per frame: every pixel, 16-byte loads when frames are 16-byte aligned.
template <class T>
__global__ void frame_totals_kernel(const T* data, std::size_t frame_px, std::size_t frames, bool vec,
                                    std::uint64_t* out) {
  for (std::size_t f = blockIdx.x; f < frames; f += gridDim.x) {
    std::uint64_t acc = 0;
    const T* frame = data + f * frame_px;
    if (vec) {
      const uint4* v = reinterpret_cast<const uint4*>(frame);
      const std::size_t nv = frame_px * sizeof(T) / 16;
      for (std::size_t i = threadIdx.x; i < nv; i += kThreads) {
        const uint4 w = __ldg(v + i);
        if constexpr (sizeof(T) == 4)
          acc += std::uint64_t(w.x) + w.y + w.z + w.w;
        else
          acc += lanes_sum<T>(w);
      }
    } else {
      for (std::size_t i = threadIdx.x; i < frame_px; i += kThreads) acc += frame[i];
    }
    acc = block_sum<kThreads>(acc);
    if (threadIdx.x == 0) out[f] = acc;
  }
}

// One warp per frame over a pixel list; complement mode returns w * total - sum.
template <class T>
__global__ void sparse_kernel(const T* data, std::size_t frame_px, std::size_t frames, const std::uint32_t* offs,
                              const std::uint32_t* w, std::size_t n, const std::uint64_t* totals,
                              std::uint32_t uniform_weight, std::uint64_t* out) {
  const unsigned lane = threadIdx.x & 31u;
  const std::size_t warps = std::size_t(gridDim.x) * (blockDim.x >> 5);
  for (std::size_t f = blockIdx.x * std::size_t(blockDim.x >> 5) + (threadIdx.x >> 5); f < frames; f += warps) {
    const T* frame = data + f * frame_px;
    std::uint64_t acc = 0;
    for (std::size_t i = lane; i < n; i += 32) acc += std::uint64_t(__ldg(w + i)) * frame[__ldg(offs + i)];
    acc = warp_sum(acc);
    if (lane == 0) out[f] = totals ? std::uint64_t(uniform_weight) * (totals[f] - acc) : acc;
  }
}

// One block per frame: weights times every pixel.
template <class T>
__global__ void dense_kernel(const T* data, std::size_t frame_px, std::size_t frames, const std::uint32_t* w,
                             std::uint64_t* out) {
  for (std::size_t f = blockIdx.x; f < frames; f += gridDim.x) {
    const T* frame = data + f * frame_px;
    std::uint64_t acc = 0;
    for (std::size_t i = threadIdx.x; i < frame_px; i += kThreads) acc += std::uint64_t(__ldg(w + i)) * frame[i];
    acc = block_sum<kThreads>(acc);
    if (threadIdx.x == 0) out[f] = acc;
  }
}

// Per-pixel sums over frames: each thread owns one pixel for a slice of frames, then adds atomically.
template <class T>
__global__ void sum_pattern_kernel(const T* data, std::size_t frame_px, std::size_t frames, std::size_t slice,
                                   unsigned long long* out) {
  const std::size_t px = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
  if (px >= frame_px) return;
  const std::size_t f0 = blockIdx.y * slice, f1 = std::min(frames, f0 + slice);
  std::uint64_t acc = 0;
  for (std::size_t f = f0; f < f1; ++f) acc += data[f * frame_px + px];
  atomicAdd(out + px, static_cast<unsigned long long>(acc));
}

// Per-pixel maximum over frames: each thread owns one pixel for a slice of frames, then takes the maximum atomically.
template <class T>
__global__ void max_pattern_kernel(const T* data, std::size_t frame_px, std::size_t frames, std::size_t slice,
                                   unsigned* out) {
  const std::size_t px = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
  if (px >= frame_px) return;
  const std::size_t f0 = blockIdx.y * slice, f1 = std::min(frames, f0 + slice);
  unsigned most = 0;
  for (std::size_t f = f0; f < f1; ++f) most = max(most, unsigned(data[f * frame_px + px]));
  atomicMax(out + px, most);
}

unsigned grid_for(std::size_t items, std::size_t per_block) {
  return unsigned(std::max<std::size_t>(1, std::min<std::size_t>((items + per_block - 1) / per_block, 1u << 20)));
}

}  // namespace

DevicePlan upload(const SumPlan& plan) {
  DevicePlan d;
  d.strategy = plan.strategy;
  d.uniform_weight = plan.uniform_weight;
  d.count = plan.strategy == Strategy::dense ? plan.weights.size() : plan.offsets.size();
  d.offsets = DeviceBuffer(std::max<std::size_t>(plan.offsets.size(), 1) * 4);
  d.weights = DeviceBuffer(std::max<std::size_t>(plan.weights.size(), 1) * 4);
  if (!plan.offsets.empty()) d.offsets.upload(plan.offsets.data(), plan.offsets.size() * 4);
  if (!plan.weights.empty()) d.weights.upload(plan.weights.data(), plan.weights.size() * 4);
  return d;
}

void compute_frame_totals(const Dataset& ds, std::uint64_t* d_out, cudaStream_t stream) {
  const Shape4D& s = ds.shape();
  dispatch_count_dtype(ds.dtype(), [&](auto z) {
    using T = decltype(z);
    const bool vec = (s.frame_pixels() * sizeof(T)) % 16 == 0;
    frame_totals_kernel<T><<<grid_for(s.frames(), 1), kThreads, 0, stream>>>(ds.device_buffer().as<T>(),
                                                                              s.frame_pixels(), s.frames(), vec, d_out);
    QGPU_CUDA_LAUNCHED("frame_totals_kernel");
  });
}

const std::uint64_t* frame_totals(const Dataset& ds, cudaStream_t stream) {
  if (auto c = ds.cached("frame_totals")) return static_cast<DeviceBuffer*>(c.get())->as<std::uint64_t>();
  auto buf = std::make_shared<DeviceBuffer>(std::max<std::size_t>(ds.shape().frames(), 1) * 8);
  compute_frame_totals(ds, buf->as<std::uint64_t>(), stream);
  ds.set_cached("frame_totals", buf);
  return buf->as<std::uint64_t>();
}

void masked_sum(const Dataset& ds, const DevicePlan& plan, std::uint64_t* d_out, cudaStream_t stream) {
  const Shape4D& s = ds.shape();
  dispatch_count_dtype(ds.dtype(), [&](auto z) {
    using T = decltype(z);
    const T* data = ds.device_buffer().as<T>();
    if (plan.strategy == Strategy::dense) {
      dense_kernel<T><<<grid_for(s.frames(), 1), kThreads, 0, stream>>>(data, s.frame_pixels(), s.frames(),
                                                                        plan.weights.as<std::uint32_t>(), d_out);
      QGPU_CUDA_LAUNCHED("dense_kernel");
      return;
    }
    const std::uint64_t* totals = plan.strategy == Strategy::complement ? frame_totals(ds, stream) : nullptr;
    sparse_kernel<T><<<grid_for(s.frames(), kThreads / 32), kThreads, 0, stream>>>(
        data, s.frame_pixels(), s.frames(), plan.offsets.as<std::uint32_t>(), plan.weights.as<std::uint32_t>(),
        plan.count, totals, plan.uniform_weight, d_out);
    QGPU_CUDA_LAUNCHED("sparse_kernel");
  });
}

std::vector<std::uint64_t> masked_sum(const Dataset& ds, const SumPlan& plan) {
  const DevicePlan dp = upload(plan);
  DeviceBuffer out(std::max<std::size_t>(ds.shape().frames(), 1) * 8);
  masked_sum(ds, dp, out.as<std::uint64_t>());
  std::vector<std::uint64_t> host(ds.shape().frames());
  out.download(host.data(), host.size() * 8);  // synchronous: also surfaces kernel faults
  return host;
}

std::vector<std::uint64_t> sum_pattern(const Dataset& ds) {
  const Shape4D& s = ds.shape();
  DeviceBuffer out(std::max<std::size_t>(s.frame_pixels(), 1) * 8);
  QGPU_CUDA(cudaMemset(out.data(), 0, out.bytes()));
  const std::size_t slice = std::max<std::size_t>(1, (s.frames() + 255) / 256);
  const dim3 grid(unsigned((s.frame_pixels() + 255) / 256), unsigned((s.frames() + slice - 1) / slice));
  dispatch_count_dtype(ds.dtype(), [&](auto z) {
    using T = decltype(z);
    sum_pattern_kernel<T><<<grid, 256>>>(ds.device_buffer().as<T>(), s.frame_pixels(), s.frames(), slice,
                                         out.as<unsigned long long>());
    QGPU_CUDA_LAUNCHED("sum_pattern_kernel");
  });
  std::vector<std::uint64_t> host(s.frame_pixels());
  out.download(host.data(), host.size() * 8);
  return host;
}

std::vector<std::uint64_t> max_pattern(const Dataset& ds) {
  const Shape4D& s = ds.shape();
  DeviceBuffer out(std::max<std::size_t>(s.frame_pixels(), 1) * 4);
  QGPU_CUDA(cudaMemset(out.data(), 0, out.bytes()));
  const std::size_t slice = std::max<std::size_t>(1, (s.frames() + 255) / 256);
  const dim3 grid(unsigned((s.frame_pixels() + 255) / 256), unsigned((s.frames() + slice - 1) / slice));
  dispatch_count_dtype(ds.dtype(), [&](auto z) {
    using T = decltype(z);
    max_pattern_kernel<T><<<grid, 256>>>(ds.device_buffer().as<T>(), s.frame_pixels(), s.frames(), slice,
                                         out.as<unsigned>());
    QGPU_CUDA_LAUNCHED("max_pattern_kernel");
  });
  std::vector<unsigned> host(s.frame_pixels());
  out.download(host.data(), host.size() * 4);
  return std::vector<std::uint64_t>(host.begin(), host.end());
}

}  // namespace qgpu::detector::cuda
