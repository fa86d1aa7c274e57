// The encoded masked-sum kernel (encoded::cuda::masked_sums). Blocks (tile, chunk of the pixel list), 8 warps, each
// warp taking 32 listed pixels at a time, one stream per lane; sparse streams and rANS alphabets beyond
// LaneDecoder::kMaxK (30) add weight x count to the block's shared per-position sums as they decode (decode_stream,
// scattered positions); constant, raw and rANS streams decode 32 positions at a time into a 32 x 33 transposition
// buffer, then lane l sums position l over the warp's streams.
// Why it is fast (it replaced a first kernel that decoded through the generic StreamCursor: 8.30 ms against 6.09 ms
// for the BF sums of the 512x512x192x192 sample; docs/benchmarks.md):
// - A lane decodes its chunk of 32 positions in a loop specialised for its model (rANS, raw, constant) instead of
//   one generic cursor call per value that switches on the model and carries every model's state.
// - rANS (LaneDecoder, lane_decoder.hpp): one shared-memory load per symbol. Each lane's coarse table holds packed
//   entries (symbol | cum[symbol] << 5 | cum[symbol + 1] << 17) for the 32 coarse slots (128 slots each), so the
//   common case (no symbol boundary between the coarse slot's start and the slot) needs neither the cumulative
//   table nor a search; otherwise the same forward search as the reference over the lane's cumulative table.
//   Renormalisation bytes are read through the read-only cache, one byte load and one bounds check per byte;
//   errors only set a flag (no per-symbol status branches).
// - The per-position sums: a fully unrolled loop over the 32 lanes when all of them hold dense streams (the
//   interior of a BF disk), weights broadcast from shared memory, one 64-bit multiply-add per value and weighting.
// - The grid is planned for balance (plan_sum_grid: waves x rounds of 32-pixel groups per warp) from the device's
//   resident block count instead of a fixed ~2048 blocks.
// Variants measured beside it on the H200 and removed (a register window for the renormalisation bytes, two
// interleaved streams per lane with smaller tables): docs/design.md.
// Every product is weight (uint32) x count (uint32) as uint64, summed modulo 2^64: exactly the CPU reference.
#include "device/cuda/cuda_check.hpp"
#include "resident/encoded/cuda/masked_sum_kernel.hpp"
#include "resident/encoded/lane_decoder.hpp"
#include "resident/encoded/stream_codec.hpp"
#include "resident/encoded/sum_grid.hpp"

namespace qgpu::encoded::cuda::detail {

namespace {

constexpr unsigned kWarps = 8;
constexpr unsigned kThreads = kWarps * 32;
constexpr std::uint32_t kLaneWords = LaneDecoder::kWords;
// Lane tables in shared memory: [warp][word][lane] (every lane reads its own bank).
constexpr std::size_t kTableBytes = std::size_t{kWarps} * kLaneWords * 32 * sizeof(std::uint32_t);
static_assert(kTableBytes % 8 == 0);

template <int K>
__global__ void __launch_bounds__(kThreads, 2)
    masked_sum_fast_kernel(const TileRef* tiles, std::uint32_t tile, const std::uint32_t* pixels,
                           const std::uint32_t* weights, std::size_t npix, std::size_t per_block, std::size_t frames,
                           unsigned long long* out, int* error) {
  extern __shared__ unsigned long long dyn[];
  auto* const tables = reinterpret_cast<std::uint32_t*>(dyn);
  unsigned long long* const acc = dyn + kTableBytes / 8;  // [K][tile]
  __shared__ std::uint32_t buf[kWarps][32][33];            // per warp: [lane (stream)][position in the chunk]
  __shared__ std::uint32_t wsh[kWarps][K][32];             // per warp: the dense lanes' weights (0 for others)
  const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
  const TileRef tr = tiles[blockIdx.x];
  for (std::uint32_t i = threadIdx.x; i < K * tile; i += blockDim.x) acc[i] = 0;
  __syncthreads();
  const std::size_t j0 = blockIdx.y * per_block;
  const std::size_t j1 = j0 + per_block < npix ? j0 + per_block : npix;
  bool bad = false;
  std::uint32_t* const row = &buf[warp][lane][0];       // this lane's values of the chunk
  const std::uint32_t* const column = &buf[warp][0][lane];  // position `lane` of every stream
  // g is the same for all lanes of a warp: the loop, the ballot and the __syncwarp calls are warp-uniform.
  for (std::size_t g = j0 + warp * 32; g < j1; g += kThreads) {
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
    const bool dense = stored && LaneDecoder::takes(s, size);  // constant, raw, rANS with K <= LaneDecoder::kMaxK
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
    LaneDecoder dec;
    dec.col = tables + warp * (kLaneWords * 32) + lane;  // stride 32 words
    if (dense && !dec.open(s, size, tr.len)) bad = true;  // a failed stream yields zeros (and the error)
    for (std::uint32_t c0 = 0; c0 < tr.len; c0 += 32) {
      const std::uint32_t m = tr.len - c0 < 32u ? tr.len - c0 : 32u;
      if (dec.model == kRans) {
        if (m == 32) {
#pragma unroll 8
          for (std::uint32_t u = 0; u < 32; ++u) row[u] = dec.rans_next(bad);
        } else {
          for (std::uint32_t u = 0; u < m; ++u) row[u] = dec.rans_next(bad);
        }
      } else if (dec.model == kRaw) {
        for (std::uint32_t u = 0; u < m; ++u) row[u] = dec.raw_at(c0 + u);
      } else if (dense) {
        const std::uint32_t v = dec.model == kConstant ? dec.base : 0u;
        for (std::uint32_t u = 0; u < m; ++u) row[u] = v;
      }
      __syncwarp();
      unsigned long long a[K];
      for (int k = 0; k < K; ++k) a[k] = 0;
      if (mask == 0xffffffffu) {  // every lane dense: fixed addresses, no bit scan
#pragma unroll
        for (unsigned src = 0; src < 32; ++src) {
          const std::uint32_t v = column[src * 33];
          for (int k = 0; k < K; ++k) a[k] += static_cast<unsigned long long>(wsh[warp][k][src]) * v;
        }
      } else {
        for (unsigned rest = mask; rest; rest &= rest - 1) {
          const unsigned src = __ffs(rest) - 1;
          const std::uint32_t v = column[src * 33];
          for (int k = 0; k < K; ++k) a[k] += static_cast<unsigned long long>(wsh[warp][k][src]) * v;
        }
      }
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

template <int K>
void launch(const Layout& layout, const TileRef* d_tiles, const std::uint32_t* d_pixels, const std::uint32_t* d_weights,
            std::size_t npix, unsigned long long* out, int* error, cudaStream_t stream) {
  const auto kernel = masked_sum_fast_kernel<K>;
  const std::size_t smem = kTableBytes + static_cast<std::size_t>(K) * layout.tile * sizeof(unsigned long long);
  QGPU_CUDA(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)));
  int device = 0, sms = 0, per_sm = 0;
  QGPU_CUDA(cudaGetDevice(&device));
  QGPU_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  QGPU_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, kThreads, smem));
  if (per_sm < 1) per_sm = 1;
  const SumGrid g = plan_sum_grid(layout.tiles(), npix, kWarps, static_cast<std::size_t>(sms) * per_sm);
  const dim3 grid(static_cast<unsigned>(layout.tiles()), static_cast<unsigned>(g.chunks));
  kernel<<<grid, kThreads, smem, stream>>>(d_tiles, layout.tile, d_pixels, d_weights, npix, g.per_block,
                                           layout.frames, out, error);
  QGPU_CUDA_LAUNCHED("encoded masked_sum (fast)");
}

}  // namespace

void launch_masked_sums_fast(const Layout& layout, const TileRef* d_tiles, const std::uint32_t* d_pixels,
                             const std::uint32_t* d_weights, std::size_t npix, int K, unsigned long long* out,
                             int* error, cudaStream_t stream) {
  if (npix == 0) return;
  if (K == 1) launch<1>(layout, d_tiles, d_pixels, d_weights, npix, out, error, stream);
  if (K == 2) launch<2>(layout, d_tiles, d_pixels, d_weights, npix, out, error, stream);
  if (K == 3) launch<3>(layout, d_tiles, d_pixels, d_weights, npix, out, error, stream);
}

}  // namespace qgpu::encoded::cuda::detail
