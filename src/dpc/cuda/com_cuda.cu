// CoM on the GPU-resident dataset: one block per frame, 16-byte coalesced loads, exact integer sums reduced
// in uint64, finished by the same com_from_sums as the host reference (bit-identical results).
#include <cuda_runtime.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstring>
#include <memory>
#include <type_traits>

#include "core/error.hpp"
#include "core/result_memory.hpp"
#include "device/cuda/buffer_pool.hpp"
#include "device/cuda/cuda_check.hpp"
#include "device/cuda/device_buffer.hpp"
#include "dpc/com_backend.hpp"
#include "dpc/com_math.hpp"

namespace qgpu::dpc::detail {

namespace {

constexpr int kThreads = 256;

struct FrameGeometry {
  std::uint32_t cols = 0;     // detector columns
  std::uint32_t pixels = 0;   // det_rows * det_cols (< 2^32, checked by the dispatcher)
  double centre_row = 0, centre_col = 0;
  std::uint64_t max_index = 0;  // max(det_rows, det_cols) - 1, for the wrap check
};

struct Sums {
  unsigned long long s = 0, sr = 0, sc = 0;
};

// Sum over the block; the total is valid in thread 0.
__device__ Sums block_reduce(Sums v) {
  __shared__ unsigned long long partial[3][kThreads / 32];
  for (int off = 16; off > 0; off >>= 1) {
    v.s += __shfl_down_sync(0xffffffffu, v.s, off);
    v.sr += __shfl_down_sync(0xffffffffu, v.sr, off);
    v.sc += __shfl_down_sync(0xffffffffu, v.sc, off);
  }
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) {
    partial[0][warp] = v.s;
    partial[1][warp] = v.sr;
    partial[2][warp] = v.sc;
  }
  __syncthreads();
  Sums t;
  if (warp == 0) {
    if (lane < kThreads / 32) {
      t.s = partial[0][lane];
      t.sr = partial[1][lane];
      t.sc = partial[2][lane];
    }
    for (int off = 16; off > 0; off >>= 1) {
      t.s += __shfl_down_sync(0xffffffffu, t.s, off);
      t.sr += __shfl_down_sync(0xffffffffu, t.sr, off);
      t.sc += __shfl_down_sync(0xffffffffu, t.sc, off);
    }
  }
  return t;
}

__device__ void finish_frame(const Sums& t, const FrameGeometry& g, float* out_row, float* out_col,
                             unsigned long long* empty, int* wrapped) {
  if (com_sums_may_wrap(t.s, g.max_index)) atomicExch(wrapped, 1);
  if (t.s == 0) atomicAdd(empty, 1ull);
  com_from_sums(t.s, t.sr, t.sc, g.centre_row, g.centre_col, out_row[blockIdx.x], out_col[blockIdx.x]);
}

// Fast path: det_cols is a multiple of K = 16 / sizeof(T), so each uint4 holds K pixels of one detector row.
// The mask (if any) is stored as T with all bits set (selected) or 0, and applied with a bitwise AND.
template <class T, bool kMasked>
__global__ void __launch_bounds__(kThreads)
    com_vec_kernel(const uint4* data, const uint4* mask, FrameGeometry g, float* out_row, float* out_col,
                   unsigned long long* empty, int* wrapped) {
  constexpr int K = 16 / sizeof(T);
  // K values of a uint8/uint16 vector and their column-weighted sum fit in 32 bits; uint32 ones need 64.
  using Acc = std::conditional_t<(sizeof(T) < 4), std::uint32_t, std::uint64_t>;
  const std::uint32_t nvec = g.pixels / K, vec_per_row = g.cols / K;
  const uint4* frame = data + std::size_t(blockIdx.x) * nvec;
  Sums acc;
#pragma unroll 4
  for (std::uint32_t i = threadIdx.x; i < nvec; i += kThreads) {
    uint4 v = __ldcs(frame + i);  // streamed: every byte is read exactly once
    if constexpr (kMasked) {
      const uint4 m = __ldg(mask + i);
      v.x &= m.x;
      v.y &= m.y;
      v.z &= m.z;
      v.w &= m.w;
    }
    T x[K];
    memcpy(x, &v, sizeof(v));
    Acc vs = 0, vc = 0;
#pragma unroll
    for (int j = 0; j < K; ++j) {
      vs += x[j];
      vc += Acc(x[j]) * Acc(j);
    }
    const std::uint32_t r = i / vec_per_row;
    const std::uint32_t c0 = (i - r * vec_per_row) * K;
    acc.s += vs;
    acc.sr += (unsigned long long)vs * r;
    acc.sc += (unsigned long long)vs * c0 + vc;
  }
  const Sums t = block_reduce(acc);
  if (threadIdx.x == 0) finish_frame(t, g, out_row, out_col, empty, wrapped);
}

// General path (any det_cols): one pixel at a time.
template <class T, bool kMasked>
__global__ void __launch_bounds__(kThreads)
    com_scalar_kernel(const T* data, const T* mask, FrameGeometry g, float* out_row, float* out_col,
                      unsigned long long* empty, int* wrapped) {
  const T* frame = data + std::size_t(blockIdx.x) * g.pixels;
  Sums acc;
  for (std::uint32_t p = threadIdx.x; p < g.pixels; p += kThreads) {
    T v = frame[p];
    if constexpr (kMasked) v &= mask[p];
    const std::uint32_t r = p / g.cols, c = p - r * g.cols;
    acc.s += v;
    acc.sr += (unsigned long long)v * r;
    acc.sc += (unsigned long long)v * c;
  }
  const Sums t = block_reduce(acc);
  if (threadIdx.x == 0) finish_frame(t, g, out_row, out_col, empty, wrapped);
}

template <class T>
void launch(const void* data, const void* mask, std::size_t frames, const FrameGeometry& g, float* rows,
            float* cols, unsigned long long* empty, int* wrapped) {
  constexpr std::uint32_t K = 16 / sizeof(T);
  const bool aligned = reinterpret_cast<std::uintptr_t>(data) % 16 == 0 &&
                       reinterpret_cast<std::uintptr_t>(mask) % 16 == 0;
  const bool vec = aligned && g.cols % K == 0;
  const unsigned blocks = unsigned(frames);
  if (vec && mask)
    com_vec_kernel<T, true><<<blocks, kThreads>>>(static_cast<const uint4*>(data), static_cast<const uint4*>(mask),
                                                  g, rows, cols, empty, wrapped);
  else if (vec)
    com_vec_kernel<T, false><<<blocks, kThreads>>>(static_cast<const uint4*>(data), nullptr, g, rows, cols, empty,
                                                   wrapped);
  else if (mask)
    com_scalar_kernel<T, true><<<blocks, kThreads>>>(static_cast<const T*>(data), static_cast<const T*>(mask), g,
                                                     rows, cols, empty, wrapped);
  else
    com_scalar_kernel<T, false><<<blocks, kThreads>>>(static_cast<const T*>(data), nullptr, g, rows, cols, empty,
                                                      wrapped);
  QGPU_CUDA_LAUNCHED(vec ? "com_vec_kernel" : "com_scalar_kernel");
}

template <class T> ComMaps com_typed(const Dataset& ds, const std::uint8_t* mask, DeviceMaps* keep) {
  const Shape4D& sh = ds.shape();
  const std::size_t frames = sh.frames(), fp = sh.frame_pixels();
  if (frames > std::size_t(INT_MAX)) throw InvalidArgument("CoM (cuda): more than 2^31 - 1 frames");
  FrameGeometry g;
  g.cols = std::uint32_t(sh.det_cols);
  g.pixels = std::uint32_t(fp);
  g.centre_row = (double(sh.det_rows) - 1) / 2;
  g.centre_col = (double(sh.det_cols) - 1) / 2;
  g.max_index = std::max(sh.det_rows, sh.det_cols) - 1;

  DeviceBuffer d_mask;
  if (mask) {
    std::vector<T> m(fp);
    for (std::size_t i = 0; i < fp; ++i) m[i] = mask[i] ? T(~T(0)) : T(0);
    d_mask = DeviceBuffer(fp * sizeof(T));
    d_mask.upload(m.data(), fp * sizeof(T));
  }
  // Both maps in one pooled buffer (no cudaMalloc per call), left to the caller through keep.
  std::shared_ptr<DeviceBuffer> d_maps = pooled_buffer(2 * frames * sizeof(float));
  float* const d_rows = d_maps->as<float>();
  float* const d_cols = d_rows + frames;
  DeviceBuffer d_flags(16);  // [0, 8): empty-frame count, [8, 12): wrapped flag
  QGPU_CUDA(cudaMemset(d_flags.data(), 0, d_flags.bytes()));
  auto* empty = static_cast<unsigned long long*>(d_flags.data());
  auto* wrapped = reinterpret_cast<int*>(static_cast<char*>(d_flags.data()) + 8);

  launch<T>(ds.device_buffer().data(), mask ? d_mask.data() : nullptr, frames, g, d_rows, d_cols, empty, wrapped);
  QGPU_CUDA(cudaDeviceSynchronize());

  ComMaps out;
  unsigned long long n_empty = 0;
  int was_wrapped = 0;
  d_flags.download(&n_empty, sizeof(n_empty), 0);
  d_flags.download(&was_wrapped, sizeof(was_wrapped), 8);
  if (was_wrapped)
    throw Error("CoM: a frame's weighted sums exceed the exact uint64 range (counts too large for this detector)");
  out.empty_frames = n_empty;
  if (keep) {  // left on the GPU, not downloaded (download_maps)
    *keep = DeviceMaps{d_maps, d_rows, d_cols, frames};
    return out;
  }
  out.row = result_vector<float>(frames);  // recycled memory, or fresh with huge pages
  out.col = result_vector<float>(frames);
  download_bytes(out.row.data(), d_rows, frames * sizeof(float));
  download_bytes(out.col.data(), d_cols, frames * sizeof(float));
  return out;
}

}  // namespace

void download_maps(const DeviceMaps& maps, ComResult& com) {
  com.com_row.data = result_vector<float>(maps.frames);  // recycled memory, or fresh with huge pages
  com.com_col.data = result_vector<float>(maps.frames);
  download_bytes(com.com_row.data.data(), maps.row, maps.frames * sizeof(float));
  download_bytes(com.com_col.data.data(), maps.col, maps.frames * sizeof(float));
}

void download_maps(const DeviceMaps& maps, ComResult& com, const FieldFill& fill) {
  for (const Image<float>* im : {&fill.dpc->dpc_row, &fill.dpc->dpc_col, fill.field_row, fill.field_col})
    if (im->data.size() != maps.frames) throw Error("download_maps: the DPC and field maps are not allocated");
  for (Image<float>* im : {&com.com_row, &com.com_col})
    if (im->data.size() != maps.frames) im->data = result_vector<float>(maps.frames);
  const float* cr = com.com_row.data.data();
  const float* cc = com.com_col.data.data();
  float* dr = fill.dpc->dpc_row.data.data();
  float* dc = fill.dpc->dpc_col.data.data();
  float* fr = fill.field_row->data.data();
  float* fc = fill.field_col->data.data();
  const double ref_r = fill.dpc->ref_row, ref_c = fill.dpc->ref_col, co = fill.cos, si = fill.sin;
  const bool t = fill.transpose;
  download_in_step({com.com_row.data.data(), com.com_col.data.data()}, {maps.row, maps.col}, maps.frames,
                   sizeof(float), [&](std::size_t i0, std::size_t i1) {
                     for (std::size_t i = i0; i < i1; ++i) {
                       const float a = centred_value(cr[i], ref_r), b = centred_value(cc[i], ref_c);
                       dr[i] = a;
                       dc[i] = b;
                       rotated_value(t ? b : a, t ? a : b, co, si, fr[i], fc[i]);
                     }
                   });
}

ComMaps com_cuda(const Dataset& ds, const std::uint8_t* mask, DeviceMaps* keep) {
  return dispatch_count_dtype(ds.dtype(), [&](auto t) { return com_typed<decltype(t)>(ds, mask, keep); });
}

}  // namespace qgpu::dpc::detail
