#include <algorithm>
#include <climits>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <type_traits>

#include "core/stage_timing.hpp"
#include "detector/cuda/masked_sum_cuda.hpp"
#include "device/cuda/cuda_check.hpp"
#include "device/cuda/launch.hpp"

namespace qgpu::detector::cuda {

namespace {

constexpr int kThreads = 256;

template <class A> __device__ __forceinline__ A warp_sum(A v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
  return v;
}

template <int N, class A> __device__ __forceinline__ A block_sum(A v) {
  __shared__ A part[N / 32];
  v = warp_sum(v);
  if ((threadIdx.x & 31) == 0) part[threadIdx.x >> 5] = v;
  __syncthreads();
  A t = 0;
  if (threadIdx.x < 32) {
    t = threadIdx.x < N / 32 ? part[threadIdx.x] : A(0);
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

// One block per frame: every pixel, 16-byte loads when frames are 16-byte aligned (unsigned counts; signed and float
// data are read element by element).
template <class T, class A = sum_t<T>>
__global__ void frame_totals_kernel(const T* data, std::size_t frame_px, std::size_t frames, bool vec, A* out) {
  for (std::size_t f = blockIdx.x; f < frames; f += gridDim.x) {
    A acc = 0;
    const T* frame = data + f * frame_px;
    bool done = false;
    if constexpr (std::is_unsigned_v<T>) {
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
        done = true;
      }
    }
    if (!done)
      for (std::size_t i = threadIdx.x; i < frame_px; i += kThreads) acc += A(frame[i]);
    acc = block_sum<kThreads>(acc);
    if (threadIdx.x == 0) out[f] = acc;
  }
}

// One warp per frame over a pixel list; complement mode returns w * (total - sum).
template <class T, class A = sum_t<T>>
__global__ void sparse_kernel(const T* data, std::size_t frame_px, std::size_t frames, const std::uint32_t* offs,
                              const std::uint32_t* w, std::size_t n, const A* totals, std::uint32_t uniform_weight,
                              A* out) {
  const unsigned lane = threadIdx.x & 31u;
  const std::size_t warps = std::size_t(gridDim.x) * (blockDim.x >> 5);
  for (std::size_t f = blockIdx.x * std::size_t(blockDim.x >> 5) + (threadIdx.x >> 5); f < frames; f += warps) {
    const T* frame = data + f * frame_px;
    A acc = 0;
    for (std::size_t i = lane; i < n; i += 32) acc += A(__ldg(w + i)) * A(frame[__ldg(offs + i)]);
    acc = warp_sum(acc);
    if (lane == 0) out[f] = totals ? A(uniform_weight) * (totals[f] - acc) : acc;
  }
}

// One block per frame: weights times every pixel.
template <class T, class A = sum_t<T>>
__global__ void dense_kernel(const T* data, std::size_t frame_px, std::size_t frames, const std::uint32_t* w, A* out) {
  for (std::size_t f = blockIdx.x; f < frames; f += gridDim.x) {
    const T* frame = data + f * frame_px;
    A acc = 0;
    for (std::size_t i = threadIdx.x; i < frame_px; i += kThreads) acc += A(__ldg(w + i)) * A(frame[i]);
    acc = block_sum<kThreads>(acc);
    if (threadIdx.x == 0) out[f] = acc;
  }
}

// Atomic adds of a slice's sum: uint64 and int64 (two's complement: the same bits) as unsigned long long; double.
__device__ __forceinline__ void atomic_add_sum(std::uint64_t* p, std::uint64_t v) {
  atomicAdd(reinterpret_cast<unsigned long long*>(p), static_cast<unsigned long long>(v));
}
__device__ __forceinline__ void atomic_add_sum(std::int64_t* p, std::int64_t v) {
  atomicAdd(reinterpret_cast<unsigned long long*>(p), static_cast<unsigned long long>(v));
}
__device__ __forceinline__ void atomic_add_sum(double* p, double v) { atomicAdd(p, v); }

// Per-pixel sums over frames: each thread owns one pixel for a slice of frames, then adds atomically.
template <class T, class A = sum_t<T>>
__global__ void sum_pattern_kernel(const T* data, std::size_t frame_px, std::size_t frames, std::size_t slice, A* out) {
  const std::size_t px = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
  if (px >= frame_px) return;
  const std::size_t f0 = blockIdx.y * slice, f1 = std::min(frames, f0 + slice);
  A acc = 0;
  for (std::size_t f = f0; f < f1; ++f) acc += A(data[f * frame_px + px]);
  atomic_add_sum(out + px, acc);
}

// The largest value as a 32-bit word whose atomicMax orders like the value: unsigned counts as they are, signed
// integers as int, floats by the sign-magnitude trick (non-negative floats order as their int bits, negative ones
// reversed as unsigned bits). Init is the word of the lowest value.
template <class T> struct MaxWord;
template <class T> struct MaxWordUnsigned {
  using W = unsigned;
  static constexpr W init() { return 0; }
  __device__ static W of(T v) { return W(v); }
  __device__ static void atomic(W* p, W w) { atomicMax(p, w); }
};
template <> struct MaxWord<std::uint8_t> : MaxWordUnsigned<std::uint8_t> {};
template <> struct MaxWord<std::uint16_t> : MaxWordUnsigned<std::uint16_t> {};
template <> struct MaxWord<std::uint32_t> : MaxWordUnsigned<std::uint32_t> {};
template <class T> struct MaxWordSigned {
  using W = int;
  static constexpr W init() { return INT_MIN; }
  __device__ static W of(T v) { return W(v); }
  __device__ static void atomic(W* p, W w) { atomicMax(p, w); }
};
template <> struct MaxWord<std::int8_t> : MaxWordSigned<std::int8_t> {};
template <> struct MaxWord<std::int16_t> : MaxWordSigned<std::int16_t> {};
template <> struct MaxWord<std::int32_t> : MaxWordSigned<std::int32_t> {};
template <> struct MaxWord<float> {
  using W = int;
  static W init() { return int(0xff800000u); }  // -inf
  __device__ static W of(float v) { return __float_as_int(v); }
  __device__ static void atomic(W* p, W w) {
    if (w >= 0)
      atomicMax(p, w);
    else
      atomicMin(reinterpret_cast<unsigned*>(p), unsigned(w));
  }
};

// Per-pixel maximum over frames: each thread owns one pixel for a slice of frames, then takes the maximum atomically.
template <class T>
__global__ void max_pattern_kernel(const T* data, std::size_t frame_px, std::size_t frames, std::size_t slice,
                                   typename MaxWord<T>::W* out) {
  const std::size_t px = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
  if (px >= frame_px) return;
  const std::size_t f0 = blockIdx.y * slice, f1 = std::min(frames, f0 + slice);
  if (f0 >= f1) return;
  T most = data[f0 * frame_px + px];
  for (std::size_t f = f0 + 1; f < f1; ++f) {
    const T v = data[f * frame_px + px];
    if (v > most) most = v;
  }
  MaxWord<T>::atomic(out + px, MaxWord<T>::of(most));
}

unsigned grid_for(std::size_t items, std::size_t per_block) {
  return grid_blocks(items, per_block, std::size_t(1) << 20, 1);  // grid-stride kernels: at most 2^20 blocks
}

// The host value of a max word.
template <class T> sum_t<T> max_value(typename MaxWord<T>::W w) {
  if constexpr (std::is_same_v<T, float>) {
    float f;
    std::memcpy(&f, &w, 4);
    return double(f);
  } else {
    return sum_t<T>(w);
  }
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

void compute_frame_totals(const Dataset& ds, void* d_out, cudaStream_t stream) {
  const Shape4D& s = ds.shape();
  dispatch_stored_dtype(ds.dtype(), [&](auto z) {
    using T = decltype(z);
    const bool vec = (s.frame_pixels() * sizeof(T)) % 16 == 0;
    frame_totals_kernel<T><<<grid_for(s.frames(), 1), kThreads, 0, stream>>>(
        ds.device_buffer().as<T>(), s.frame_pixels(), s.frames(), vec, static_cast<sum_t<T>*>(d_out));
    QGPU_CUDA_LAUNCHED("frame_totals_kernel");
  });
}

// The per-frame totals of a dense resident, kept on the GPU beside it (the dataset's cache slot of this type).
struct FrameTotalsOnDevice {
  DeviceBuffer totals;
};

const void* frame_totals(const Dataset& ds, cudaStream_t stream) {
  // Look-up, compute and store under one lock: two threads computing at once (e.g. two ADF requests of `qgpu serve`)
  // would otherwise both store, and the second store frees the first thread's buffer while its kernel reads it. The
  // slot is never replaced afterwards, so the returned pointer lives as long as the dataset.
  static std::mutex mutex;
  const std::lock_guard<std::mutex> lock(mutex);
  if (auto c = ds.cached<FrameTotalsOnDevice>()) return c->totals.data();
  auto kept = std::make_shared<FrameTotalsOnDevice>(
      FrameTotalsOnDevice{DeviceBuffer(std::max<std::size_t>(ds.shape().frames(), 1) * 8)});
  compute_frame_totals(ds, kept->totals.data(), stream);
  // A later caller may read the slot on another stream: a stream other than the legacy default one (which orders
  // against every blocking stream) finishes the totals before they are shared.
  if (stream) QGPU_CUDA(cudaStreamSynchronize(stream));
  ds.set_cached(std::shared_ptr<const FrameTotalsOnDevice>(kept));
  return kept->totals.data();
}

void masked_sum(const Dataset& ds, const DevicePlan& plan, void* d_out, cudaStream_t stream) {
  const Shape4D& s = ds.shape();
  dispatch_stored_dtype(ds.dtype(), [&](auto z) {
    using T = decltype(z);
    using A = sum_t<T>;
    const T* data = ds.device_buffer().as<T>();
    A* const out = static_cast<A*>(d_out);
    if (plan.strategy == Strategy::dense) {
      dense_kernel<T><<<grid_for(s.frames(), 1), kThreads, 0, stream>>>(data, s.frame_pixels(), s.frames(),
                                                                        plan.weights.as<std::uint32_t>(), out);
      QGPU_CUDA_LAUNCHED("dense_kernel");
      return;
    }
    const A* totals =
        plan.strategy == Strategy::complement ? static_cast<const A*>(frame_totals(ds, stream)) : nullptr;
    sparse_kernel<T><<<grid_for(s.frames(), kThreads / 32), kThreads, 0, stream>>>(
        data, s.frame_pixels(), s.frames(), plan.offsets.as<std::uint32_t>(), plan.weights.as<std::uint32_t>(),
        plan.count, totals, plan.uniform_weight, out);
    QGPU_CUDA_LAUNCHED("sparse_kernel");
  });
}

SumImage masked_sum(const Dataset& ds, const SumPlan& plan) {
  std::optional<timing::Stage> stage(std::in_place, "upload");  // the plan's pixels and weights, the output
  const DevicePlan dp = upload(plan);
  DeviceBuffer out(std::max<std::size_t>(ds.shape().frames(), 1) * 8);
  stage.reset();
  masked_sum(ds, dp, out.data());
  return dispatch_stored_dtype(ds.dtype(), [&](auto z) -> SumImage {
    const timing::Stage transfer("transfer");  // (waits for the kernel first)
    Image<sum_t<decltype(z)>> img;
    img.data.resize(ds.shape().frames());
    out.download(img.data.data(), img.data.size() * 8);  // synchronous: also surfaces kernel faults
    return img;
  });
}

SumImage sum_pattern(const Dataset& ds) {
  const Shape4D& s = ds.shape();
  DeviceBuffer out(std::max<std::size_t>(s.frame_pixels(), 1) * 8);
  QGPU_CUDA(cudaMemset(out.data(), 0, out.bytes()));  // 0 in uint64, int64 and double
  const std::size_t slice = std::max<std::size_t>(1, (s.frames() + 255) / 256);
  const dim3 grid(unsigned((s.frame_pixels() + 255) / 256), unsigned((s.frames() + slice - 1) / slice));
  return dispatch_stored_dtype(ds.dtype(), [&](auto z) -> SumImage {
    using T = decltype(z);
    using A = sum_t<T>;
    sum_pattern_kernel<T><<<grid, 256>>>(ds.device_buffer().as<T>(), s.frame_pixels(), s.frames(), slice,
                                         out.as<A>());
    QGPU_CUDA_LAUNCHED("sum_pattern_kernel");
    Image<A> img;
    img.data.resize(s.frame_pixels());
    out.download(img.data.data(), img.data.size() * 8);
    return img;
  });
}

SumImage max_pattern(const Dataset& ds) {
  const Shape4D& s = ds.shape();
  DeviceBuffer out(std::max<std::size_t>(s.frame_pixels(), 1) * 4);
  const std::size_t slice = std::max<std::size_t>(1, (s.frames() + 255) / 256);
  const dim3 grid(unsigned((s.frame_pixels() + 255) / 256), unsigned((s.frames() + slice - 1) / slice));
  return dispatch_stored_dtype(ds.dtype(), [&](auto z) -> SumImage {
    using T = decltype(z);
    using W = typename MaxWord<T>::W;
    std::vector<W> host(s.frame_pixels(), MaxWord<T>::init());
    if (!host.empty()) out.upload(host.data(), host.size() * 4);
    max_pattern_kernel<T><<<grid, 256>>>(ds.device_buffer().as<T>(), s.frame_pixels(), s.frames(), slice,
                                         out.as<W>());
    QGPU_CUDA_LAUNCHED("max_pattern_kernel");
    out.download(host.data(), host.size() * 4);
    Image<sum_t<T>> img;
    img.data.resize(host.size());
    for (std::size_t i = 0; i < host.size(); ++i) img.data[i] = max_value<T>(host[i]);
    return img;
  });
}

}  // namespace qgpu::detector::cuda
