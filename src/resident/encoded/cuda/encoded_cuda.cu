#include <algorithm>
#include <cub/block/block_reduce.cuh>
#include <string>

#include "device/cuda/buffer_pool.hpp"
#include "device/cuda/cuda_check.hpp"
#include "resident/encoded/cuda/encoded_cuda.hpp"
#include "resident/encoded/cuda/masked_sum_kernel.hpp"
#include "resident/encoded/stream_codec.hpp"

namespace qgpu::encoded::cuda {

namespace {

constexpr unsigned kThreads = 256;

unsigned blocks_for(std::size_t n) { return static_cast<unsigned>((n + kThreads - 1) / kThreads); }

template <class T>
__global__ void totals_kernel(const T* __restrict__ frames, std::size_t P, std::size_t count,
                              std::uint64_t* out) {
  using Reduce = cub::BlockReduce<unsigned long long, kThreads>;
  __shared__ typename Reduce::TempStorage tmp;
  for (std::size_t f = blockIdx.x; f < count; f += gridDim.x) {
    const T* fr = frames + f * P;
    unsigned long long acc = 0;
    for (std::size_t i = threadIdx.x; i < P; i += kThreads) acc += fr[i];
    acc = Reduce(tmp).Sum(acc);
    if (threadIdx.x == 0) out[f] = acc;
    __syncthreads();
  }
}

__global__ void totals_minus_kernel(const std::uint64_t* __restrict__ totals, std::uint64_t weight, std::size_t n,
                                    std::uint64_t* inout) {
  const std::size_t step = std::size_t{gridDim.x} * blockDim.x;
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n; i += step)
    inout[i] = weight * (totals[i] - inout[i]);
}

__device__ inline bool decode_at(const TileRef& tr, std::size_t p, std::uint32_t first, std::uint32_t last,
                                 auto&& put) {
  const std::uint32_t o = tr.dir[p];
  return decode_stream(tr.payload + o, tr.dir[p + 1] - o, tr.len, first, last, put);
}

template <class T>
__global__ void frame_kernel(const TileRef* tiles, std::size_t t, std::uint32_t i, std::size_t P, T* out,
                             int* error) {
  const std::size_t p = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  if (p >= P) return;
  if (!decode_at(tiles[t], p, i, i + 1, [&](std::uint32_t, std::uint32_t v) { out[p] = static_cast<T>(v); }))
    atomicExch(error, 1);
}

// Block (tile, chunk of the pixel list): each thread writes its pixel's row out[j][tile positions].
template <class T>
__global__ void pixels_kernel(const TileRef* tiles, std::uint32_t tile, std::size_t frames,
                              const std::uint32_t* pixels, std::size_t npix, T* out, int* error) {
  const std::size_t j = blockIdx.y * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  if (j >= npix) return;
  const TileRef tr = tiles[blockIdx.x];
  T* o = out + j * frames + blockIdx.x * static_cast<std::size_t>(tile);
  if (!decode_at(tr, pixels[j], 0, tr.len, [&](std::uint32_t i, std::uint32_t v) { o[i] = static_cast<T>(v); }))
    atomicExch(error, 1);
}

// Block (tile t0 + blockIdx.x, chunk of the detector rectangle's pixels).
template <class T>
__global__ void region_kernel(const TileRef* tiles, std::uint32_t tile, std::size_t t0, cpu::RegionRequest r,
                              std::size_t first, std::size_t last, T* out, int* error) {
  const std::size_t det_n = r.det_rows * r.det_cols;
  const std::size_t j = blockIdx.y * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  if (j >= det_n) return;
  const std::size_t t = t0 + blockIdx.x, start = t * tile;
  const TileRef tr = tiles[t];
  const std::size_t end = start + tr.len;
  const auto a = static_cast<std::uint32_t>((first > start ? first : start) - start);
  const auto b = static_cast<std::uint32_t>((last < end ? last : end) - start);
  const std::size_t p = (r.drow0 + j / r.det_cols) * r.det_width + r.dcol0 + j % r.det_cols;
  const bool ok = decode_at(tr, p, a, b, [&](std::uint32_t i, std::uint32_t v) {
    const std::size_t pos = start + i, row = pos / r.scan_cols, col = pos % r.scan_cols;
    if (col < r.col0 || col >= r.col0 + r.cols) return;
    out[((row - r.row0) * r.cols + (col - r.col0)) * det_n + j] = static_cast<T>(v);
  });
  if (!ok) atomicExch(error, 1);
}

// A device error word leased from the buffer pool (device/cuda/buffer_pool.hpp: no allocation per query; with a
// stream-ordered cudaMallocAsync / cudaFreeAsync per query, one pixel's masked sum took 0.34-0.54 ms on the H100,
// leased 0.13-0.24 ms: s16c, s16d); check() waits for the stream and raises FormatError naming the query when set.
class ErrorFlag {
 public:
  explicit ErrorFlag(cudaStream_t s) : stream_(s), word_(sizeof(int)) {
    QGPU_CUDA(cudaMemsetAsync(word_.data(), 0, sizeof(int), s));
  }
  int* ptr() const { return word_.as<int>(); }
  void check(const char* what) const {
    int e = 0;
    QGPU_CUDA(cudaMemcpyAsync(&e, word_.data(), sizeof(int), cudaMemcpyDeviceToHost, stream_));
    QGPU_CUDA(cudaStreamSynchronize(stream_));
    if (e) throw FormatError(std::string("encoded resident: a malformed stream in ") + what);
  }

 private:
  cudaStream_t stream_;
  LeasedBuffer word_;
};

}  // namespace

void frame_totals(const Layout& layout, const void* d_frames, std::size_t count, std::uint64_t* d_out,
                  cudaStream_t stream) {
  if (count == 0) return;
  dispatch_count_dtype(layout.dtype, [&](auto z) {
    using V = decltype(z);
    const auto grid = static_cast<unsigned>(std::min<std::size_t>(count, 65536));
    totals_kernel<V><<<grid, kThreads, 0, stream>>>(static_cast<const V*>(d_frames), layout.frame_pixels, count,
                                                    d_out);
  });
  QGPU_CUDA_LAUNCHED("encoded frame totals");
}

void masked_sums_async(const Layout& layout, const TileRef* d_tiles, const std::uint32_t* d_pixels,
                       const std::uint32_t* d_weights, std::size_t npix, int K, std::uint64_t* d_out, int* d_error,
                       cudaStream_t stream) {
  if (K < 1 || K > 3) throw InvalidArgument("encoded masked sums take 1 to 3 weightings, not " + std::to_string(K));
  QGPU_CUDA(cudaMemsetAsync(d_out, 0, K * layout.frames * sizeof(std::uint64_t), stream));
  if (npix == 0) return;
  detail::launch_masked_sums(layout, d_tiles, d_pixels, d_weights, npix, K,
                             reinterpret_cast<unsigned long long*>(d_out), d_error, stream);
}

void masked_sums(const Layout& layout, const TileRef* d_tiles, const std::uint32_t* d_pixels,
                 const std::uint32_t* d_weights, std::size_t npix, int K, std::uint64_t* d_out,
                 cudaStream_t stream) {
  if (K < 1 || K > 3) throw InvalidArgument("encoded masked sums take 1 to 3 weightings, not " + std::to_string(K));
  if (npix == 0) {
    QGPU_CUDA(cudaMemsetAsync(d_out, 0, K * layout.frames * sizeof(std::uint64_t), stream));
    return;
  }
  ErrorFlag err(stream);
  masked_sums_async(layout, d_tiles, d_pixels, d_weights, npix, K, d_out, err.ptr(), stream);
  err.check("masked_sum");
}

void masked_sum(const Layout& layout, const TileRef* d_tiles, const std::uint32_t* d_pixels,
                const std::uint32_t* d_weights, std::size_t npix, std::uint64_t* d_out, cudaStream_t stream) {
  masked_sums(layout, d_tiles, d_pixels, d_weights, npix, 1, d_out, stream);
}

void complement_sum(const Layout& layout, const TileRef* d_tiles, const std::uint64_t* d_totals,
                    const std::uint32_t* d_pixels, const std::uint32_t* d_ones, std::size_t npix,
                    std::uint32_t weight, std::uint64_t* d_out, cudaStream_t stream) {
  ErrorFlag err(stream);
  masked_sums_async(layout, d_tiles, d_pixels, d_ones, npix, 1, d_out, err.ptr(), stream);
  const auto grid = static_cast<unsigned>(std::min<std::size_t>(blocks_for(layout.frames), 4096));
  totals_minus_kernel<<<grid, kThreads, 0, stream>>>(d_totals, weight, layout.frames, d_out);
  QGPU_CUDA_LAUNCHED("encoded totals minus complement");
  err.check("complement sum");
}

void totals_minus(const std::uint64_t* d_totals, std::size_t n, std::uint64_t* d_inout, cudaStream_t stream) {
  if (n == 0) return;
  const auto grid = static_cast<unsigned>(std::min<std::size_t>(blocks_for(n), 4096));
  totals_minus_kernel<<<grid, kThreads, 0, stream>>>(d_totals, 1, n, d_inout);
  QGPU_CUDA_LAUNCHED("encoded totals minus");
}

void decode_frame(const Layout& layout, const TileRef* d_tiles, std::size_t index, void* d_out,
                  cudaStream_t stream) {
  if (index >= layout.frames) throw RegionError("frame " + std::to_string(index) + " is outside the dataset");
  const std::size_t P = layout.frame_pixels;
  QGPU_CUDA(cudaMemsetAsync(d_out, 0, P * dtype_size(layout.dtype), stream));
  ErrorFlag err(stream);
  dispatch_count_dtype(layout.dtype, [&](auto z) {
    using V = decltype(z);
    frame_kernel<V><<<blocks_for(P), kThreads, 0, stream>>>(d_tiles, index / layout.tile,
                                                            static_cast<std::uint32_t>(index % layout.tile), P,
                                                            static_cast<V*>(d_out), err.ptr());
  });
  QGPU_CUDA_LAUNCHED("encoded decode_frame");
  err.check("decode_frame");
}

void decode_pixels(const Layout& layout, const TileRef* d_tiles, const std::uint32_t* d_pixels, std::size_t npix,
                   void* d_out, cudaStream_t stream) {
  if (npix == 0) return;
  if (blocks_for(npix) > 65535u) throw InvalidArgument("encoded pixel gather of more than 16.7M pixels");
  QGPU_CUDA(cudaMemsetAsync(d_out, 0, npix * layout.frames * dtype_size(layout.dtype), stream));
  ErrorFlag err(stream);
  dispatch_count_dtype(layout.dtype, [&](auto z) {
    using V = decltype(z);
    // One thread per (tile, pixel): a short list (the SSB gather decodes a few groups' pixels at a time) gets
    // blocks of the list rounded up to a warp rather than 256 threads mostly idle.
    const unsigned threads = static_cast<unsigned>(std::min<std::size_t>(kThreads, (npix + 31) / 32 * 32));
    const dim3 grid(static_cast<unsigned>(layout.tiles()), static_cast<unsigned>((npix + threads - 1) / threads));
    pixels_kernel<V><<<grid, threads, 0, stream>>>(d_tiles, layout.tile, layout.frames, d_pixels, npix,
                                                   static_cast<V*>(d_out), err.ptr());
  });
  QGPU_CUDA_LAUNCHED("encoded decode_pixels");
  err.check("decode_pixels");
}

void decode_region(const Layout& layout, const TileRef* d_tiles, const cpu::RegionRequest& r, void* d_out,
                   cudaStream_t stream) {
  const std::size_t det_n = r.det_rows * r.det_cols;
  if (r.rows == 0 || r.cols == 0 || det_n == 0 || r.col0 + r.cols > r.scan_cols ||
      (r.row0 + r.rows) * r.scan_cols > layout.frames || r.drow0 + r.det_rows > layout.frame_pixels / r.det_width ||
      r.dcol0 + r.det_cols > r.det_width)
    throw RegionError("encoded region read reaches outside the dataset");
  if (blocks_for(det_n) > 65535u) throw InvalidArgument("encoded region read of more than 16.7M detector pixels");
  QGPU_CUDA(cudaMemsetAsync(d_out, 0, r.rows * r.cols * det_n * dtype_size(layout.dtype), stream));
  const std::size_t first = r.row0 * r.scan_cols + r.col0,
                    last = (r.row0 + r.rows - 1) * r.scan_cols + r.col0 + r.cols;
  const std::size_t t0 = first / layout.tile, t1 = (last - 1) / layout.tile;
  ErrorFlag err(stream);
  dispatch_count_dtype(layout.dtype, [&](auto z) {
    using V = decltype(z);
    const dim3 grid(static_cast<unsigned>(t1 - t0 + 1), blocks_for(det_n));
    region_kernel<V><<<grid, kThreads, 0, stream>>>(d_tiles, layout.tile, t0, r, first, last,
                                                    static_cast<V*>(d_out), err.ptr());
  });
  QGPU_CUDA_LAUNCHED("encoded decode_region");
  err.check("decode_region");
}

}  // namespace qgpu::encoded::cuda
