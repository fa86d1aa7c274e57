// The encoded masked-sum kernel with two streams per lane (SumKernel::fast_ilp). The fast kernel
// (masked_sum_kernel.cu) is latency bound: each rANS symbol is a dependent chain (state -> slot -> shared table
// load -> state update -> renormalisation byte), one chain per lane, and its ~106 KB of shared memory per block
// leave 2 blocks of 8 warps per SM (512 chains). This kernel keeps the fast kernel's decoding and sums and differs in:
// - Two streams per lane (a warp takes 64 listed pixels at a time: lane l decodes pixels g + l and g + 32 + l),
//   their steps interleaved (both table loads, then both state updates, both renormalisations, both values), so
//   that one chain's latency hides behind the other's work.
// - Less shared memory per stream: packed tables of 45 words (LaneDecoderPacked: cum as 16-bit halves, alphabets
//   up to 24; larger ones take the scattered path), and chunks of 16 positions (per stream a row of 16 values and
//   the stream's K weights, odd row stride). Per block (4 warps, 256 streams) with K = 1 or 2: 66 or 72 KB, so 3
//   blocks fit per SM (768 chains; K = 3: 2 blocks).
// - The sums: lane l adds position l % 16 over the rows of its half of the warp (half l / 16: streams 0-31 or
//   32-63; the second half's rows are 16 words further, so that the two halves read different banks), then one
//   shuffle adds the halves; weights are read from the rows' pad words (0 for rows without a dense stream, whose
//   values are then ignored).
// - Escapes: the next escape byte is loaded ahead (LaneDecoderPacked), off the decode chain.
// SumKernel::fast_ilp_window reads renormalisation bytes through the word window of fast_window.
// Every product is weight (uint32) x count (uint32) as uint64, summed modulo 2^64: exactly the CPU reference.
#include <type_traits>

#include "device/cuda/cuda_check.hpp"
#include "resident/encoded/cuda/masked_sum_kernel.hpp"
#include "resident/encoded/lane_decoder.hpp"
#include "resident/encoded/stream_codec.hpp"
#include "resident/encoded/sum_grid.hpp"

namespace qgpu::encoded::cuda::detail {

namespace {

template <bool kWordWindow>
using DecoderT = LaneDecoderT<kWordWindow, true>;
using Decoder = DecoderT<false>;  // the table geometry (the same for both)
constexpr unsigned kWarps = 4;
constexpr unsigned kThreads = kWarps * 32;
constexpr unsigned kStreams = 64;  // per warp: two per lane
constexpr unsigned kChunk = 16;    // positions decoded per stream before the warp sums them
constexpr unsigned kHalfShift = 16;  // the second half's rows start this many words further (other banks)
// Tables in shared memory: [warp][word][stream] (stream = half * 32 + lane: every lane reads its own bank).
constexpr std::size_t kTableWords = std::size_t{kWarps} * Decoder::kWords * kStreams;
// Row stride (odd: a lane's row writes hit distinct banks): kChunk values, then the stream's K weights.
template <int K>
constexpr unsigned kRowStride = (kChunk + K) | 1u;
template <int K>
constexpr unsigned kHalfWords = 32 * kRowStride<K> + kHalfShift;  // one half's rows and the shift
template <int K>
constexpr std::size_t kWarpBufWords = 2 * std::size_t{kHalfWords<K>};

template <int K>
constexpr std::size_t shared_bytes(std::uint32_t tile) {
  return static_cast<std::size_t>(K) * tile * sizeof(unsigned long long) +
         (kTableWords + kWarps * kWarpBufWords<K>) * sizeof(std::uint32_t);
}

// Chunk positions [c0, c0 + m) of one stream into row (any model; kZero rows get zeros).
template <class Dec>
__device__ __forceinline__ void fill_row(Dec& dec, std::uint32_t* row, std::uint32_t c0, std::uint32_t m,
                                         bool& bad) {
  if (dec.model == kRans) {
    for (std::uint32_t u = 0; u < m; ++u) row[u] = dec.rans_next(bad);
  } else if (dec.model == kRaw) {
    for (std::uint32_t u = 0; u < m; ++u) row[u] = dec.raw_at(c0 + u);
  } else {
    const std::uint32_t v = dec.model == kConstant ? dec.base : 0u;
    for (std::uint32_t u = 0; u < m; ++u) row[u] = v;
  }
}

template <int K, bool kWordWindow>
__global__ void __launch_bounds__(kThreads, 3)
    masked_sum_ilp_kernel(const TileRef* tiles, std::uint32_t tile, const std::uint32_t* pixels,
                          const std::uint32_t* weights, std::size_t npix, std::size_t per_block, std::size_t frames,
                          unsigned long long* out, int* error) {
  constexpr unsigned S = kRowStride<K>;
  using Dec = DecoderT<kWordWindow>;
  extern __shared__ unsigned long long dyn[];
  unsigned long long* const acc = dyn;  // [K][tile]
  auto* const tables = reinterpret_cast<std::uint32_t*>(dyn + static_cast<std::size_t>(K) * tile);
  const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
  std::uint32_t* const wbuf = tables + kTableWords + warp * kWarpBufWords<K>;
  const TileRef tr = tiles[blockIdx.x];
  for (std::uint32_t i = threadIdx.x; i < K * tile; i += blockDim.x) acc[i] = 0;
  __syncthreads();
  const std::size_t j0 = blockIdx.y * per_block;
  const std::size_t j1 = j0 + per_block < npix ? j0 + per_block : npix;
  bool bad = false;
  std::uint32_t* const row_a = wbuf + lane * S;                      // this lane's first stream
  std::uint32_t* const row_b = wbuf + kHalfWords<K> + lane * S;      // and its second
  const std::uint32_t* const half = wbuf + (lane >> 4) * kHalfWords<K>;  // the rows this lane sums
  const unsigned u = lane & 15u;                                     // ... at this position of the chunk
  std::uint32_t* const table = tables + warp * (Decoder::kWords * kStreams) + lane;

  // Reads listed pixel j's stream and weights; scattered streams are summed here; a dense stream is opened in dec.
  // Writes the row's weights (0 unless dense). Returns whether the stream is dense.
  const auto prepare = [&](std::size_t j, std::uint32_t* row, Dec& dec) {
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
    const bool stored = any && size != 0;
    const bool dense = stored && Dec::takes(s, size);
    if (stored && !dense) {  // sparse, rANS with an alphabet above 24, or a bad model byte (decode_stream rejects it)
      const bool ok = decode_stream(s, size, tr.len, 0, tr.len, [&](std::uint32_t i, std::uint32_t v) {
        for (int k = 0; k < K; ++k)
          if (wk[k]) atomicAdd(acc + k * tile + i, static_cast<unsigned long long>(wk[k]) * v);
      });
      if (!ok) bad = true;
    }
    for (int k = 0; k < K; ++k) row[kChunk + k] = dense ? wk[k] : 0u;
    if (dense && !dec.open(s, size, tr.len)) bad = true;  // a failed stream yields zeros (and the error)
    return dense;
  };

  // g is the same for all lanes of a warp: the loop, the ballot and the __syncwarp calls are warp-uniform.
  for (std::size_t g = j0 + warp * kStreams; g < j1; g += kWarps * kStreams) {
    Dec da, db;
    da.col = table;
    db.col = table + 32;
    da.stride = db.stride = kStreams;
    const bool dense_a = prepare(g + lane, row_a, da);
    const bool dense_b = prepare(g + 32 + lane, row_b, db);
    if (__ballot_sync(0xffffffffu, dense_a || dense_b) == 0) continue;
    for (std::uint32_t c0 = 0; c0 < tr.len; c0 += kChunk) {
      const std::uint32_t m = tr.len - c0 < kChunk ? tr.len - c0 : kChunk;
      if (m == kChunk && da.model == kRans && db.model == kRans) {
#pragma unroll 4
        for (std::uint32_t i = 0; i < kChunk; ++i) {
          const std::uint32_t ea = da.rans_entry(), eb = db.rans_entry();
          const std::uint32_t sa = da.rans_advance(ea), sb = db.rans_advance(eb);
          da.rans_renorm(bad);
          db.rans_renorm(bad);
          row_a[i] = da.rans_value(sa, bad);
          row_b[i] = db.rans_value(sb, bad);
        }
      } else {
        fill_row(da, row_a, c0, m, bad);
        fill_row(db, row_b, c0, m, bad);
      }
      __syncwarp();
      unsigned long long a[K];
      for (int k = 0; k < K; ++k) a[k] = 0;
#pragma unroll
      for (unsigned r = 0; r < 32; ++r) {
        const std::uint32_t v = half[r * S + u];
        for (int k = 0; k < K; ++k) a[k] += static_cast<unsigned long long>(half[r * S + kChunk + k]) * v;
      }
      for (int k = 0; k < K; ++k) a[k] += __shfl_xor_sync(0xffffffffu, a[k], 16);
      if (lane < m)
        for (int k = 0; k < K; ++k)
          if (a[k]) atomicAdd(acc + k * tile + c0 + lane, a[k]);
      __syncwarp();
    }
  }
  if (bad) atomicExch(error, 1);
  __syncthreads();
  const std::size_t first = blockIdx.x * static_cast<std::size_t>(tile);
  for (int k = 0; k < K; ++k)
    for (std::uint32_t i = threadIdx.x; i < tr.len; i += blockDim.x)
      if (acc[k * tile + i]) atomicAdd(out + k * frames + first + i, acc[k * tile + i]);
}

template <int K, bool kWordWindow>
void launch(const Layout& layout, const TileRef* d_tiles, const std::uint32_t* d_pixels, const std::uint32_t* d_weights,
            std::size_t npix, unsigned long long* out, int* error, cudaStream_t stream) {
  const auto kernel = masked_sum_ilp_kernel<K, kWordWindow>;
  const std::size_t smem = shared_bytes<K>(layout.tile);
  QGPU_CUDA(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)));
  QGPU_CUDA(cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout,
                                 cudaSharedmemCarveoutMaxShared));
  int device = 0, sms = 0, per_sm = 0;
  QGPU_CUDA(cudaGetDevice(&device));
  QGPU_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  QGPU_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, kThreads, smem));
  if (per_sm < 1) per_sm = 1;
  const SumGrid g = plan_sum_grid(layout.tiles(), npix, kWarps, static_cast<std::size_t>(sms) * per_sm, kStreams);
  const dim3 grid(static_cast<unsigned>(layout.tiles()), static_cast<unsigned>(g.chunks));
  kernel<<<grid, kThreads, smem, stream>>>(d_tiles, layout.tile, d_pixels, d_weights, npix, g.per_block,
                                           layout.frames, out, error);
  QGPU_CUDA_LAUNCHED("encoded masked_sum (fast_ilp)");
}

}  // namespace

void launch_masked_sums_ilp(const Layout& layout, const TileRef* d_tiles, const std::uint32_t* d_pixels,
                            const std::uint32_t* d_weights, std::size_t npix, int K, bool word_window,
                            unsigned long long* out, int* error, cudaStream_t stream) {
  if (npix == 0) return;
  const auto go = [&](auto k, auto window) {
    launch<decltype(k)::value, decltype(window)::value>(layout, d_tiles, d_pixels, d_weights, npix, out, error,
                                                        stream);
  };
  const auto with_k = [&](auto window) {
    if (K == 1) go(std::integral_constant<int, 1>{}, window);
    if (K == 2) go(std::integral_constant<int, 2>{}, window);
    if (K == 3) go(std::integral_constant<int, 3>{}, window);
  };
  if (word_window)
    with_k(std::true_type{});
  else
    with_k(std::false_type{});
}

}  // namespace qgpu::encoded::cuda::detail
