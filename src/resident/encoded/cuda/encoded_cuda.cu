#include <algorithm>
#include <cstdlib>
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>
#include <string>

#include "device/cuda/cuda_check.hpp"
#include "resident/encoded/cuda/encoded_cuda.hpp"
#include "resident/encoded/cuda/masked_sum_kernel.hpp"
#include "resident/encoded/stream_codec.hpp"

namespace qgpu::encoded::cuda {

namespace {

constexpr unsigned kThreads = 256;
constexpr std::size_t kScratchBudget = std::size_t{256} << 20;  // per-stream encode slots of one group of tiles

unsigned blocks_for(std::size_t n) { return static_cast<unsigned>((n + kThreads - 1) / kThreads); }

// One thread per stream s = tile * P + pixel (adjacent threads read adjacent pixels: coalesced).
template <class T>
__global__ void encode_streams(const T* __restrict__ frames, std::size_t P, std::uint32_t tile, std::size_t count,
                               std::size_t streams, std::uint8_t* scratch, std::uint32_t slot_bytes,
                               std::uint32_t* dir, unsigned long long* sum_pattern) {
  const std::size_t s = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  if (s >= streams) return;
  const std::size_t t = s / P, p = s % P, first = t * tile;
  const auto n = static_cast<std::uint32_t>(count - first < tile ? count - first : tile);
  const T* base = frames + first * P + p;
  const auto get = [base, P](std::uint32_t i) { return static_cast<std::uint32_t>(base[i * P]); };
  std::uint64_t sum = 0;
  dir[t * (P + 1) + p] = encode_stream(get, n, scratch + s * slot_bytes, &sum);
  if (sum) atomicAdd(sum_pattern + p, static_cast<unsigned long long>(sum));
}

// One block per tile: stream sizes -> exclusive offsets in place, dir[P] = the tile's payload bytes.
__global__ void tile_offsets(std::uint32_t* dir, std::size_t P) {
  using Scan = cub::BlockScan<std::uint32_t, 1024>;
  __shared__ typename Scan::TempStorage tmp;
  std::uint32_t* d = dir + blockIdx.x * (P + 1);
  std::uint32_t carry = 0;
  for (std::size_t c = 0; c < P; c += 1024) {
    const std::size_t i = c + threadIdx.x;
    std::uint32_t v = i < P ? d[i] : 0u, excl = 0, agg = 0;
    Scan(tmp).ExclusiveSum(v, excl, agg);
    if (i < P) d[i] = carry + excl;
    carry += agg;
    __syncthreads();
  }
  if (threadIdx.x == 0) d[P] = carry;
}

__global__ void compact_streams(const std::uint8_t* scratch, std::uint32_t slot_bytes, const std::uint32_t* dir,
                                std::size_t P, std::size_t streams, const std::uint64_t* tile_base,
                                std::uint8_t* payload) {
  const std::size_t s = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  if (s >= streams) return;
  const std::size_t t = s / P, p = s % P;
  const std::uint32_t* d = dir + t * (P + 1);
  const std::uint32_t o = d[p], n = d[p + 1] - o;
  const std::uint8_t* src = scratch + s * slot_bytes;
  std::uint8_t* dst = payload + tile_base[t] + o;
  for (std::uint32_t j = 0; j < n; ++j) dst[j] = src[j];
}

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

__device__ inline bool decode_at(const TileRef& tr, std::size_t p, std::uint32_t first, std::uint32_t last,
                                 auto&& put) {
  const std::uint32_t o = tr.dir[p];
  return decode_stream(tr.payload + o, tr.dir[p + 1] - o, tr.len, first, last, put);
}

// Masked sums. Block (tile, chunk of the pixel list), 8 warps; each warp takes 32 pixels at a time, one stream
// per lane. Sparse streams (few nonzeros at scattered positions) add weight * value to the block's per-position
// sums in shared memory as they are decoded (scattered positions: little contention); so do rANS streams with an
// alphabet beyond StridedTables::kMaxK (rare: counts spread over more than 30 values). Dense streams (constant,
// raw, rANS) are decoded in lockstep through StreamCursor (its rANS tables in shared memory, one bank per lane: a
// conflict-free coarse slot -> symbol lookup and a short forward step), 32 positions at a time, into a 32 x 33
// transposition
// buffer; then lane l sums position l over the warp's dense streams and adds it once to the block's sums (one
// shared atomic per position and warp instead of one per value). Every product is weight (uint32) x count
// (uint32) as uint64, summed modulo 2^64, exactly as the CPU reference. At the end each block adds its sums to the
// output (one global atomic per position and weighting).
constexpr unsigned kSumWarps = 8;
constexpr unsigned kSumThreads = kSumWarps * 32;
// Dynamic shared memory: the cursors' tables [warp][word][lane], then the sums [K][tile] (8-byte aligned).
constexpr std::size_t kSumTableBytes = std::size_t{kSumWarps} * StridedTables::kWords * 32 * sizeof(std::uint32_t);
static_assert(kSumTableBytes % 8 == 0);

template <int K>
__global__ void __launch_bounds__(kSumThreads)
    masked_sum_kernel(const TileRef* tiles, std::uint32_t tile, const std::uint32_t* pixels,
                      const std::uint32_t* weights, std::size_t npix, std::size_t per_block, std::size_t frames,
                      unsigned long long* out, int* error) {
  extern __shared__ unsigned long long dyn[];
  auto* const tables = reinterpret_cast<std::uint32_t*>(dyn);
  unsigned long long* const acc = dyn + kSumTableBytes / 8;  // [K][tile]
  __shared__ std::uint32_t buf[kSumWarps][32][33];     // per warp: [lane (stream)][position in the chunk]
  __shared__ std::uint32_t wsh[kSumWarps][K][32];      // per warp: the dense lanes' weights (0 for other lanes)
  const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
  const TileRef tr = tiles[blockIdx.x];
  for (std::uint32_t i = threadIdx.x; i < K * tile; i += blockDim.x) acc[i] = 0;
  __syncthreads();
  const std::size_t j0 = blockIdx.y * per_block;
  const std::size_t j1 = j0 + per_block < npix ? j0 + per_block : npix;
  bool bad = false;
  // g is the same for all lanes of a warp: the loop, the ballot and the __syncwarp calls are warp-uniform.
  for (std::size_t g = j0 + warp * 32; g < j1; g += kSumThreads) {
    const std::size_t j = g + lane;
    std::uint32_t wk[K];
    const std::uint8_t* s = nullptr;
    std::uint32_t size = 0;
    bool any = false;
    for (int k = 0; k < K; ++k) wk[k] = 0;
    if (j < j1) {
      const std::uint32_t p = pixels[j], o = tr.dir[p];
      s = tr.payload + o;
      size = tr.dir[p + 1] - o;
      for (int k = 0; k < K; ++k) {
        wk[k] = weights[k * npix + j];
        any = any || wk[k] != 0;
      }
    }
    const bool stored = any && size != 0;  // a stream to decode (an empty stream is all zero)
    const std::uint8_t model = stored ? s[0] : std::uint8_t{kZero};
    const bool dense = model == kConstant || model == kRaw ||
                       (model == kRans && rans_alphabet(s, size) <= StridedTables::kMaxK);
    if (stored && !dense) {  // sparse, rANS with a large alphabet, or a bad model byte (decode_stream rejects it)
      const bool ok = decode_stream(s, size, tr.len, 0, tr.len, [&](std::uint32_t i, std::uint32_t v) {
        for (int k = 0; k < K; ++k)
          if (wk[k]) atomicAdd(acc + k * tile + i, static_cast<unsigned long long>(wk[k]) * v);
      });
      if (!ok) bad = true;
    }
    const unsigned mask = __ballot_sync(0xffffffffu, dense);
    if (mask == 0) continue;
    for (int k = 0; k < K; ++k) wsh[warp][k][lane] = dense ? wk[k] : 0u;
    StreamCursor<StridedTables> cur;
    cur.tab.col = tables + warp * (StridedTables::kWords * 32) + lane;
    cur.tab.stride = 32;
    if (dense && !cur.open(s, size, tr.len)) bad = true;  // a failed cursor yields zeros
    for (std::uint32_t c0 = 0; c0 < tr.len; c0 += 32) {
      const std::uint32_t m = tr.len - c0 < 32u ? tr.len - c0 : 32u;
      if (dense)
        for (std::uint32_t u = 0; u < m; ++u) buf[warp][lane][u] = cur.next();
      __syncwarp();
      if (lane < m) {
        unsigned long long a[K];
        for (int k = 0; k < K; ++k) a[k] = 0;
        for (unsigned rest = mask; rest; rest &= rest - 1) {
          const unsigned src = __ffs(rest) - 1;
          const std::uint32_t v = buf[warp][src][lane];
          if (v)
            for (int k = 0; k < K; ++k) a[k] += static_cast<unsigned long long>(wsh[warp][k][src]) * v;
        }
        for (int k = 0; k < K; ++k)
          if (a[k]) atomicAdd(acc + k * tile + c0 + lane, a[k]);
      }
      __syncwarp();
    }
    if (dense && !cur.ok) bad = true;
  }
  if (bad) atomicExch(error, 1);
  __syncthreads();
  const std::size_t first = blockIdx.x * static_cast<std::size_t>(tile);
  for (int k = 0; k < K; ++k)
    for (std::uint32_t i = threadIdx.x; i < tr.len; i += blockDim.x)
      if (acc[k * tile + i]) atomicAdd(out + k * frames + first + i, acc[k * tile + i]);
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

// A device error word (stream-ordered allocation: no device-wide synchronisation per query); check() waits for
// the stream and raises FormatError naming the query when it was set.
class ErrorFlag {
 public:
  explicit ErrorFlag(cudaStream_t s) : stream_(s) {
    QGPU_CUDA(cudaMallocAsync(reinterpret_cast<void**>(&word_), sizeof(int), s));
    QGPU_CUDA(cudaMemsetAsync(word_, 0, sizeof(int), s));
  }
  ~ErrorFlag() { cudaFreeAsync(word_, stream_); }
  ErrorFlag(const ErrorFlag&) = delete;
  ErrorFlag& operator=(const ErrorFlag&) = delete;
  int* ptr() const { return word_; }
  void check(const char* what) const {
    int e = 0;
    QGPU_CUDA(cudaMemcpyAsync(&e, word_, sizeof(int), cudaMemcpyDeviceToHost, stream_));
    QGPU_CUDA(cudaStreamSynchronize(stream_));
    if (e) throw FormatError(std::string("encoded resident: a malformed stream in ") + what);
  }

 private:
  cudaStream_t stream_;
  int* word_ = nullptr;
};

}  // namespace

std::vector<DeviceTiles> encode(const Layout& layout, const void* d_frames, std::size_t count,
                                std::uint64_t* d_sum_pattern, cudaStream_t stream, EncodeScratch* reuse) {
  validate(layout);
  std::vector<DeviceTiles> groups;
  if (count == 0) return groups;
  const std::size_t P = layout.frame_pixels, T = layout.tile, elem = dtype_size(layout.dtype);
  const std::uint32_t slot = stream_slot_bytes(layout.tile);
  const std::size_t ntiles = (count + T - 1) / T;
  const std::size_t group = std::min(ntiles, std::max<std::size_t>(1, kScratchBudget / (P * slot)));
  EncodeScratch local;
  EncodeScratch& ws = reuse ? *reuse : local;
  // Grown only when too small: a caller that keeps the scratch allocates once (no cudaMalloc/cudaFree, which
  // synchronise the device, per call). Reuse is ordered by `stream`.
  if (!ws.slots || ws.slots->bytes() < group * P * slot) {
    if (ws.slots) QGPU_CUDA(cudaStreamSynchronize(stream));
    ws.slots = std::make_unique<DeviceBuffer>(group * P * slot);
  }
  if (!ws.base || ws.base->bytes() < group * sizeof(std::uint64_t)) {
    if (ws.base) QGPU_CUDA(cudaStreamSynchronize(stream));
    ws.base = std::make_unique<DeviceBuffer>(group * sizeof(std::uint64_t));
  }
  std::uint8_t* const scratch = ws.slots->as<std::uint8_t>();
  for (std::size_t g0 = 0; g0 < ntiles; g0 += group) {
    const std::size_t g = std::min(group, ntiles - g0), frames_g = std::min(count - g0 * T, g * T),
                      streams = g * P;
    DeviceTiles out;
    out.dir = std::make_shared<DeviceBuffer>(g * (P + 1) * sizeof(std::uint32_t));
    std::uint32_t* dir = out.dir->as<std::uint32_t>();
    dispatch_count_dtype(layout.dtype, [&](auto z) {
      using V = decltype(z);
      const V* f = reinterpret_cast<const V*>(static_cast<const std::uint8_t*>(d_frames) + g0 * T * P * elem);
      encode_streams<V><<<blocks_for(streams), kThreads, 0, stream>>>(
          f, P, layout.tile, frames_g, streams, scratch, slot, dir,
          reinterpret_cast<unsigned long long*>(d_sum_pattern));
    });
    QGPU_CUDA_LAUNCHED("encode_streams");
    tile_offsets<<<static_cast<unsigned>(g), 1024, 0, stream>>>(dir, P);
    QGPU_CUDA_LAUNCHED("tile_offsets");
    // The payload is allocated to the exact size: the host needs the tiles' byte counts (dir[P] of each tile).
    std::vector<std::uint32_t> tile_bytes(g);
    QGPU_CUDA(cudaMemcpy2DAsync(tile_bytes.data(), sizeof(std::uint32_t), dir + P, (P + 1) * sizeof(std::uint32_t),
                                sizeof(std::uint32_t), g, cudaMemcpyDeviceToHost, stream));
    QGPU_CUDA(cudaStreamSynchronize(stream));
    std::vector<std::uint64_t> base(g);
    std::uint64_t total = 0;
    for (std::size_t k = 0; k < g; ++k) {
      base[k] = total;
      total += tile_bytes[k];
    }
    out.payload = std::make_shared<DeviceBuffer>(std::max<std::uint64_t>(total, 1));
    // base (pageable) is staged by the call before it returns; the previous group's compaction that read ws.base
    // runs before this copy (same stream).
    QGPU_CUDA(cudaMemcpyAsync(ws.base->data(), base.data(), g * sizeof(std::uint64_t), cudaMemcpyHostToDevice, stream));
    compact_streams<<<blocks_for(streams), kThreads, 0, stream>>>(scratch, slot, dir, P, streams,
                                                                  ws.base->as<std::uint64_t>(),
                                                                  out.payload->as<std::uint8_t>());
    QGPU_CUDA_LAUNCHED("compact_streams");
    for (std::size_t k = 0; k < g; ++k) {
      const auto len = static_cast<std::uint32_t>(std::min(T, frames_g - k * T));
      out.refs.push_back({out.payload->as<std::uint8_t>() + base[k], dir + k * (P + 1), len, 0});
    }
    groups.push_back(std::move(out));
  }
  QGPU_CUDA(cudaStreamSynchronize(stream));
  return groups;
}

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

const char* sum_kernel_name(SumKernel k) {
  switch (k) {
    case SumKernel::fast: return "fast";
    case SumKernel::fast_window: return "fast_window";
    case SumKernel::fast_ilp: return "fast_ilp";
    case SumKernel::fast_ilp_window: return "fast_ilp_window";
    case SumKernel::lockstep: return "lockstep";
  }
  return "?";
}

SumKernel query_sum_kernel() {
  const char* v = std::getenv("QGPU_SUM_KERNEL");
  if (!v || !*v) return kDefaultSumKernel;
  for (SumKernel k : {SumKernel::fast, SumKernel::fast_window, SumKernel::fast_ilp, SumKernel::fast_ilp_window,
                      SumKernel::lockstep})
    if (std::string(v) == sum_kernel_name(k)) return k;
  throw InvalidArgument(std::string("QGPU_SUM_KERNEL=") + v +
                        " is not fast, fast_window, fast_ilp, fast_ilp_window or lockstep");
}

void masked_sums_async(const Layout& layout, const TileRef* d_tiles, const std::uint32_t* d_pixels,
                       const std::uint32_t* d_weights, std::size_t npix, int K, std::uint64_t* d_out, int* d_error,
                       cudaStream_t stream, SumKernel kernel) {
  if (K < 1 || K > 3) throw InvalidArgument("encoded masked sums take 1 to 3 weightings, not " + std::to_string(K));
  QGPU_CUDA(cudaMemsetAsync(d_out, 0, K * layout.frames * sizeof(std::uint64_t), stream));
  if (npix == 0) return;
  auto* out = reinterpret_cast<unsigned long long*>(d_out);
  if (kernel == SumKernel::fast_ilp || kernel == SumKernel::fast_ilp_window) {
    detail::launch_masked_sums_ilp(layout, d_tiles, d_pixels, d_weights, npix, K,
                                   kernel == SumKernel::fast_ilp_window, out, d_error, stream);
    return;
  }
  if (kernel != SumKernel::lockstep) {
    detail::launch_masked_sums_fast(layout, d_tiles, d_pixels, d_weights, npix, K, kernel == SumKernel::fast_window,
                                    out, d_error, stream);
    return;
  }
  // Enough blocks to fill the GPU several times over (about 2048), each with at least one group of 32 pixels per
  // warp; every block decodes whole streams of one tile.
  const std::size_t tiles = layout.tiles();
  const std::size_t want = std::max<std::size_t>(1, (2048 + tiles - 1) / tiles);
  const std::size_t chunks = std::min(want, (npix + kSumThreads - 1) / kSumThreads);
  const std::size_t per_block = (npix + chunks - 1) / chunks;
  const dim3 grid(static_cast<unsigned>(tiles), static_cast<unsigned>(chunks));
  const std::size_t smem = kSumTableBytes + static_cast<std::size_t>(K) * layout.tile * sizeof(unsigned long long);
  const auto launch = [&](auto kernel) {
    QGPU_CUDA(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)));
    kernel<<<grid, kSumThreads, smem, stream>>>(d_tiles, layout.tile, d_pixels, d_weights, npix, per_block,
                                                layout.frames, out, d_error);
  };
  if (K == 1) launch(masked_sum_kernel<1>);
  if (K == 2) launch(masked_sum_kernel<2>);
  if (K == 3) launch(masked_sum_kernel<3>);
  QGPU_CUDA_LAUNCHED("encoded masked_sum");
}

void masked_sums(const Layout& layout, const TileRef* d_tiles, const std::uint32_t* d_pixels,
                 const std::uint32_t* d_weights, std::size_t npix, int K, std::uint64_t* d_out,
                 cudaStream_t stream, SumKernel kernel) {
  if (K < 1 || K > 3) throw InvalidArgument("encoded masked sums take 1 to 3 weightings, not " + std::to_string(K));
  if (npix == 0) {
    QGPU_CUDA(cudaMemsetAsync(d_out, 0, K * layout.frames * sizeof(std::uint64_t), stream));
    return;
  }
  ErrorFlag err(stream);
  masked_sums_async(layout, d_tiles, d_pixels, d_weights, npix, K, d_out, err.ptr(), stream, kernel);
  err.check("masked_sum");
}

void masked_sum(const Layout& layout, const TileRef* d_tiles, const std::uint32_t* d_pixels,
                const std::uint32_t* d_weights, std::size_t npix, std::uint64_t* d_out, cudaStream_t stream,
                SumKernel kernel) {
  masked_sums(layout, d_tiles, d_pixels, d_weights, npix, 1, d_out, stream, kernel);
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
    const dim3 grid(static_cast<unsigned>(layout.tiles()), blocks_for(npix));
    pixels_kernel<V><<<grid, kThreads, 0, stream>>>(d_tiles, layout.tile, layout.frames, d_pixels, npix,
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
