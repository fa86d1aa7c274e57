// The encoded masked-sum kernel (encoded::cuda::masked_sums). Blocks (tile, chunk of the pixel list), 8 warps, each
// warp taking 32 listed pixels at a time, one stream per lane:
// - The warp first copies its 32 streams into its part of shared memory, in aligned 32-bit words (asynchronous
//   copies, all in flight at once; the payload buffers are padded by kPayloadPad so that the last word stays
//   inside the allocation). A stream that does not fit the warp's staging area is read where it is.
// - Sparse streams and rANS alphabets beyond LaneDecoder::kMaxK (30) add weight x count to the block's shared
//   per-position sums as they decode (decode_stream, scattered positions).
// - Raw streams (fixed-width values; the bright-field disk at medium and high dose) are summed by positions
//   (transposed_raw): the lanes take 128 positions, read each raw stream's values there in turn (one or two aligned
//   words each) and add weight x value in registers, with no warp reduction per value (encoded CoM of a 256x256
//   scan at 4e3-2e5 counts per frame on the H100: 2.9-3.4 -> 2.2-2.9 ms, s16c).
// - Constant and rANS streams (LaneDecoder) decode position by position in lockstep: at every position the warp
//   sums weight x value over its lanes with one warp reduction (REDUX) per weighting, and lane u keeps the sum of
//   position c0 + u; every 32 positions each lane adds its sum to the block's shared sums. Every lane (constant and
//   empty ones, and raw ones once summed, as one-symbol rANS streams) runs LaneDecoder::rans_next, whose common
//   cases take no branch.
// Why it is fast: the renormalisation and escape bytes and the stream headers come from shared memory with 32-bit
// addresses (a global byte load in the rANS dependency chain made 44 % of the stalls of the previous kernel:
// docs/benchmarks.md); the common cases of a symbol take no branch (LaneDecoder), so the lanes of a warp stay
// converged; the per-lane tables stay in shared memory (one load per symbol, lane_decoder.hpp); and the warp
// reduction replaced a 34 KB transposition buffer, so two blocks of 8 warps still fit an SM with the staging areas.
// Exactness: every product is weight (uint32) x count as uint64, summed modulo 2^64 as the CPU reference. The
// warp reduction adds 32-bit values: when some lane's weight x the dtype's largest count could make the sum of 32
// lanes exceed 32 bits, the warp sums the 64-bit products in four 16-bit limbs instead (exact).
#include <cuda_pipeline.h>

#include <map>
#include <mutex>
#include <type_traits>
#include <utility>

#include "device/cuda/cuda_check.hpp"
#include "resident/encoded/cuda/masked_sum_kernel.hpp"
#include "resident/encoded/lane_decoder.hpp"
#include "resident/encoded/stream_codec.hpp"
#include "resident/encoded/sum_grid.hpp"

namespace qgpu::encoded::cuda::detail {

namespace {

constexpr unsigned kWarps = 8;
constexpr unsigned kThreads = kWarps * 32;
constexpr unsigned kFull = 0xffffffffu;
constexpr std::uint32_t kLaneWords = LaneDecoder::kWords;
// Lane tables in shared memory: [warp][word][lane] (every lane reads its own bank).
constexpr std::size_t kTableBytes = std::size_t{kWarps} * kLaneWords * 32 * sizeof(std::uint32_t);
static_assert(kTableBytes % 8 == 0);
constexpr std::uint32_t kMinStageWords = 256;  // below this a staging area is not worth its shared memory

// Copies the warp's streams (lane l: s, size; size 0 = nothing) into stage (capacity words) one after another,
// each as the aligned words that cover it. Returns whether this lane's stream is there, and at which byte offset
// from stage (else it is read where it is).
struct Staged {
  bool fits;
  std::uint32_t offset;
};
__device__ Staged stage_streams(const std::uint8_t* s, std::uint32_t size, std::uint32_t* stage,
                                std::uint32_t capacity, unsigned lane) {
  const auto addr = reinterpret_cast<std::uintptr_t>(s);
  const std::uintptr_t a0 = addr & ~std::uintptr_t{3};
  const auto words = size ? static_cast<std::uint32_t>((addr + size - a0 + 3) >> 2) : 0u;
  std::uint32_t incl = words;  // inclusive prefix sum over the lanes
  for (unsigned d = 1; d < 32; d <<= 1) {
    const std::uint32_t t = __shfl_up_sync(kFull, incl, d);
    if (lane >= d) incl += t;
  }
  const bool fits = words != 0 && incl <= capacity;
  const std::uint32_t off = incl - words;
  for (unsigned rest = __ballot_sync(kFull, fits); rest; rest &= rest - 1) {
    const int src = __ffs(rest) - 1;
    const auto* from = reinterpret_cast<const std::uint32_t*>(__shfl_sync(kFull, a0, src));
    const std::uint32_t n = __shfl_sync(kFull, words, src), o = __shfl_sync(kFull, off, src);
    for (std::uint32_t w = lane; w < n; w += 32) __pipeline_memcpy_async(stage + o + w, from + w, 4);
  }
  __pipeline_commit();  // every copy in flight at once, then one wait
  __pipeline_wait_prior(0);
  __syncwarp();
  return {fits, 4 * off + static_cast<std::uint32_t>(addr - a0)};
}

// Sum over the warp of 64-bit products, exact: four reductions of 16-bit limbs (each sum < 2^21).
__device__ inline unsigned long long warp_sum_wide(unsigned long long v) {
  const unsigned long long l0 = __reduce_add_sync(kFull, static_cast<unsigned>(v & 0xffffu)),
                           l1 = __reduce_add_sync(kFull, static_cast<unsigned>((v >> 16) & 0xffffu)),
                           l2 = __reduce_add_sync(kFull, static_cast<unsigned>((v >> 32) & 0xffffu)),
                           l3 = __reduce_add_sync(kFull, static_cast<unsigned>(v >> 48));
  return l0 + (l1 << 16) + (l2 << 32) + (l3 << 48);
}

// A warp whose dense lanes hold raw and constant streams only (no rANS; the bright-field disk at high dose): the lanes
// take positions instead of streams. For each group of kRawSpan positions, every lane reads the values of its
// positions c0 + lane + 32 s (s < kRawSpan / 32) from each raw stream in turn (the stream's width, base, address and
// weights broadcast from the lane that holds it, once per group; neighbouring lanes read neighbouring bits, so the
// loads touch a few consecutive words) and adds weight x value in registers: no warp reduction per value. Constant
// lanes add the same sum at every position (one reduction per warp). Exact as the reduction path: for each position
// the sum over the 32 lanes' weight x count fits 32 bits (narrow), whatever the order.
constexpr std::uint32_t kRawSpan = 128;
// With all_flat false (rANS lanes in the warp) only the raw lanes are summed here (those of width 0 as constants).
template <int K, class Dec>
__device__ void transposed_raw(const Dec& dec, bool dense, const std::uint32_t (&wd)[K], std::uint32_t len,
                               unsigned long long* acc, std::uint32_t tile, unsigned lane, bool all_flat) {
  constexpr std::uint32_t S = kRawSpan / 32;
  const bool is_raw = dec.model == kRaw, raw = dense && is_raw && dec.w != 0;
  // Lanes with the same value at every position: raw of width 0, and constant and empty ones when all_flat.
  const bool flat_lane = !raw && (is_raw || all_flat);
  unsigned flat[K];
  for (int k = 0; k < K; ++k) flat[k] = __reduce_add_sync(kFull, flat_lane ? wd[k] * dec.base : 0u);
  const unsigned raws = __ballot_sync(kFull, raw);
  for (std::uint32_t c0 = 0; c0 < len; c0 += kRawSpan) {
    unsigned a[K][S];
    for (int k = 0; k < K; ++k)
      for (std::uint32_t s = 0; s < S; ++s) a[k][s] = flat[k];
    for (unsigned rest = raws; rest; rest &= rest - 1) {
      const int src = __ffs(rest) - 1;
      const std::uint32_t w = __shfl_sync(kFull, dec.w, src), shift = __shfl_sync(kFull, dec.raw_shift, src),
                          base = __shfl_sync(kFull, dec.base, src);
      std::uint32_t ws[K];
      for (int k = 0; k < K; ++k) ws[k] = __shfl_sync(kFull, wd[k], src);
      const std::uint32_t mask = w >= 32u ? 0xffffffffu : (1u << w) - 1u;
      std::uint32_t shared_words = 0;
      const std::uint32_t* words = nullptr;
      if constexpr (Dec::kShared) {
        shared_words = __shfl_sync(kFull, dec.shared_p, src) & ~3u;
      } else {
        const auto p = reinterpret_cast<unsigned long long>(dec.p) & ~3ull;
        words = reinterpret_cast<const std::uint32_t*>(__shfl_sync(kFull, p, src));
      }
#pragma unroll
      for (std::uint32_t s = 0; s < S; ++s) {
        const std::uint32_t i = c0 + lane + 32u * s;
        if (i < len) {
          const std::uint32_t bit = shift + i * w, j = bit >> 5, sh = bit & 31u;
          std::uint32_t lo, hi = 0;
          if constexpr (Dec::kShared) {
            asm("ld.shared.u32 %0, [%1];" : "=r"(lo) : "r"(shared_words + 4u * j));
            if (sh + w > 32u) asm("ld.shared.u32 %0, [%1];" : "=r"(hi) : "r"(shared_words + 4u * j + 4u));
          } else {
            lo = words[j];
            if (sh + w > 32u) hi = words[j + 1];
          }
          const std::uint32_t v = base + (static_cast<std::uint32_t>(((static_cast<unsigned long long>(hi) << 32) | lo) >> sh) & mask);
          for (int k = 0; k < K; ++k) a[k][s] += ws[k] * v;
        }
      }
    }
    for (std::uint32_t s = 0; s < S; ++s) {
      const std::uint32_t i = c0 + lane + 32u * s;
      if (i < len)
        for (int k = 0; k < K; ++k)
          if (a[k][s]) atomicAdd(acc + k * tile + i, static_cast<unsigned long long>(a[k][s]));
    }
  }
}

template <int K>
__global__ void __launch_bounds__(kThreads, 2)
    masked_sum_kernel(const TileRef* tiles, std::uint32_t tile, const std::uint32_t* pixels,
                      const std::uint32_t* weights, std::size_t npix, std::size_t per_block, std::size_t frames,
                      std::uint32_t narrow_weight, std::uint32_t stage_words, unsigned long long* out, int* error) {
  extern __shared__ unsigned long long dyn[];
  auto* const tables = reinterpret_cast<std::uint32_t*>(dyn);
  unsigned long long* const acc = dyn + kTableBytes / 8;  // [K][tile]
  const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
  std::uint32_t* const stage = reinterpret_cast<std::uint32_t*>(acc + K * tile) + warp * stage_words;
  const TileRef tr = tiles[blockIdx.x];
  for (std::uint32_t i = threadIdx.x; i < K * tile; i += blockDim.x) acc[i] = 0;
  __syncthreads();
  const std::size_t j0 = blockIdx.y * per_block;
  const std::size_t j1 = j0 + per_block < npix ? j0 + per_block : npix;
  bool bad = false;
  // g is the same for all lanes of a warp: the loops, the ballots and the warp reductions are warp-uniform.
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
    const Staged st = stage_streams(s, stored ? size : 0u, stage, stage_words, lane);
    const std::uint8_t* const sp = st.fits ? reinterpret_cast<const std::uint8_t*>(stage) + st.offset : s;
    const bool dense = stored && LaneDecoder::takes(sp, size);  // constant, raw, rANS with K <= LaneDecoder::kMaxK
    if (stored && !dense) {  // sparse, rANS with a large alphabet, or a bad model byte (decode_stream rejects it)
      const bool ok = decode_stream(sp, size, tr.len, 0, tr.len, [&](std::uint32_t i, std::uint32_t v) {
        for (int k = 0; k < K; ++k)
          if (wk[k]) atomicAdd(acc + k * tile + i, static_cast<unsigned long long>(wk[k]) * v);
      });
      if (!ok) bad = true;
    }
    if (__ballot_sync(kFull, dense) != 0) {
      std::uint32_t wd[K];  // the weights of dense lanes (0 for the others: they add nothing)
      bool small = true;
      for (int k = 0; k < K; ++k) {
        wd[k] = dense ? wk[k] : 0u;
        small = small && wd[k] <= narrow_weight;
      }
      const bool narrow = __all_sync(kFull, small);  // 32 lanes' weight x count sums fit 32 bits
      // Decodes the dense lanes' streams (two instances below: shared-memory loads when every stream is staged,
      // generic loads when some are read where they are).
      const auto run = [&](auto in_shared) {
        BasicLaneDecoder<decltype(in_shared)::value> dec;
        dec.place(tables + warp * (kLaneWords * 32), lane);
        if (dense && !dec.open(sp, size, tr.len)) bad = true;  // a failed stream yields zeros (and the error)
        if (dec.model == kZero) dec.as_constant(0u, reinterpret_cast<const std::uint8_t*>(dec.col));
        // rANS, constant and empty lanes (e.g. a BF disk) all decode through rans_next: one instruction stream.
        bool lockstep = __all_sync(kFull, dec.model != kRaw);
        if (!lockstep && narrow) {
          // Raw lanes (the bright-field disk at medium and high dose under the fast policy) are summed by positions
          // (transposed_raw); with no rANS lane the constant and empty ones too, else those stay for the rANS
          // lockstep below, where the raw lanes then count as empty.
          const bool no_rans = __all_sync(kFull, dec.model != kRans);
          transposed_raw<K>(dec, dense, wd, tr.len, acc, tile, lane, no_rans);
          if (no_rans) return;  // (nothing for finish() to check)
          if (dec.model == kRaw) {
            for (int k = 0; k < K; ++k) wd[k] = 0;
            dec.model = kConstant;
            dec.as_constant(0u, reinterpret_cast<const std::uint8_t*>(dec.col));
          }
          lockstep = true;
        }
        for (std::uint32_t c0 = 0; c0 < tr.len; c0 += 32) {
          const std::uint32_t m = tr.len - c0 < 32u ? tr.len - c0 : 32u;
          unsigned long long mine[K];
          for (int k = 0; k < K; ++k) mine[k] = 0;
          if (lockstep && narrow && m == 32) {
            unsigned mine32[K];
            for (int k = 0; k < K; ++k) mine32[k] = 0;
#pragma unroll 8
            for (std::uint32_t u = 0; u < 32; ++u) {
              const std::uint32_t v = dec.rans_next(bad);
              for (int k = 0; k < K; ++k) {
                const unsigned r = __reduce_add_sync(kFull, wd[k] * v);
                mine32[k] = lane == u ? r : mine32[k];
              }
            }
            for (int k = 0; k < K; ++k) mine[k] = mine32[k];
          } else {
            for (std::uint32_t u = 0; u < m; ++u) {
              const std::uint32_t v = dec.next(c0 + u, bad);
              for (int k = 0; k < K; ++k) {
                const unsigned long long r = narrow ? __reduce_add_sync(kFull, wd[k] * v)
                                                    : warp_sum_wide(static_cast<unsigned long long>(wd[k]) * v);
                if (lane == u) mine[k] = r;
              }
            }
          }
          if (lane < m)
            for (int k = 0; k < K; ++k)
              if (mine[k]) atomicAdd(acc + k * tile + c0 + lane, mine[k]);
        }
        dec.finish(bad);
      };
      if (__all_sync(kFull, !dense || st.fits))
        run(std::true_type{});  // every stream in shared memory (a lane without one decodes its table's zeros)
      else
        run(std::false_type{});
    }
    __syncwarp();  // every lane is done with the staged streams before the next round copies over them
  }
  if (bad) atomicExch(error, 1);
  __syncthreads();
  const std::size_t first = blockIdx.x * static_cast<std::size_t>(tile);
  for (int k = 0; k < K; ++k)
    for (std::uint32_t i = threadIdx.x; i < tr.len; i += blockDim.x)
      if (acc[k * tile + i]) atomicAdd(out + k * frames + first + i, acc[k * tile + i]);
}

// The largest weight for which 32 lanes' weight x count (count <= the dtype's largest) sum within 32 bits.
std::uint32_t narrow_weight_limit(DType dtype) {
  const std::uint64_t vmax = dtype == DType::u8 ? 0xffu : dtype == DType::u16 ? 0xffffu : 0xffffffffu;
  return static_cast<std::uint32_t>(0xffffffffull / (32u * vmax));
}

// Per device, K and tile length: the staging words per warp, the dynamic shared memory, and the resident blocks
// (what the device's limits give; computed once, not per query).
struct LaunchShape {
  std::uint32_t stage_words = 0;
  std::size_t smem = 0;
  std::size_t slots = 1;  // blocks resident on the whole device
};

template <int K>
LaunchShape launch_shape(std::uint32_t tile) {
  static std::mutex mutex;
  static std::map<std::pair<int, std::uint32_t>, LaunchShape> known;
  int device = 0;
  QGPU_CUDA(cudaGetDevice(&device));
  std::lock_guard<std::mutex> lock(mutex);
  const auto it = known.find({device, tile});
  if (it != known.end()) return it->second;
  const auto kernel = masked_sum_kernel<K>;
  int sms = 0, per_sm_smem = 0, optin = 0, reserved = 0;
  QGPU_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  QGPU_CUDA(cudaDeviceGetAttribute(&per_sm_smem, cudaDevAttrMaxSharedMemoryPerMultiprocessor, device));
  QGPU_CUDA(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  QGPU_CUDA(cudaDeviceGetAttribute(&reserved, cudaDevAttrReservedSharedMemoryPerBlock, device));
  const std::size_t fixed = kTableBytes + static_cast<std::size_t>(K) * tile * sizeof(unsigned long long);
  // Staging words per warp: what is left of an SM's shared memory with two blocks resident (else one).
  LaunchShape shape;
  for (int blocks : {2, 1}) {
    std::size_t per_block = static_cast<std::size_t>(per_sm_smem) / blocks - static_cast<std::size_t>(reserved);
    if (per_block > static_cast<std::size_t>(optin)) per_block = static_cast<std::size_t>(optin);
    if (per_block < fixed) continue;
    const std::size_t words = (per_block - fixed) / (kWarps * sizeof(std::uint32_t));
    if (words >= kMinStageWords || blocks == 1) {
      shape.stage_words = static_cast<std::uint32_t>(words < (1u << 20) ? words : (1u << 20));
      break;
    }
  }
  shape.smem = fixed + std::size_t{kWarps} * shape.stage_words * sizeof(std::uint32_t);
  // (the occupancy query counts only up to the kernel's current dynamic shared-memory limit)
  QGPU_CUDA(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(shape.smem)));
  int per_sm = 0;
  QGPU_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, kThreads, shape.smem));
  shape.slots = static_cast<std::size_t>(sms) * static_cast<std::size_t>(per_sm < 1 ? 1 : per_sm);
  known[{device, tile}] = shape;
  return shape;
}

template <int K>
void launch(const Layout& layout, const TileRef* d_tiles, const std::uint32_t* d_pixels, const std::uint32_t* d_weights,
            std::size_t npix, unsigned long long* out, int* error, cudaStream_t stream) {
  const LaunchShape shape = launch_shape<K>(layout.tile);
  // Set at every launch: another tile length may have set a smaller limit on this device since.
  QGPU_CUDA(cudaFuncSetAttribute(masked_sum_kernel<K>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                 static_cast<int>(shape.smem)));
  const SumGrid g = plan_sum_grid(layout.tiles(), npix, kWarps, shape.slots);
  const dim3 grid(static_cast<unsigned>(layout.tiles()), static_cast<unsigned>(g.chunks));
  masked_sum_kernel<K><<<grid, kThreads, shape.smem, stream>>>(d_tiles, layout.tile, d_pixels, d_weights, npix,
                                                               g.per_block, layout.frames,
                                                               narrow_weight_limit(layout.dtype), shape.stage_words,
                                                               out, error);
  QGPU_CUDA_LAUNCHED("encoded masked_sum");
}

}  // namespace

void launch_masked_sums(const Layout& layout, const TileRef* d_tiles, const std::uint32_t* d_pixels,
                        const std::uint32_t* d_weights, std::size_t npix, int K, unsigned long long* out, int* error,
                        cudaStream_t stream) {
  if (npix == 0) return;
  if (K == 1) launch<1>(layout, d_tiles, d_pixels, d_weights, npix, out, error, stream);
  if (K == 2) launch<2>(layout, d_tiles, d_pixels, d_weights, npix, out, error, stream);
  if (K == 3) launch<3>(layout, d_tiles, d_pixels, d_weights, npix, out, error, stream);
}

}  // namespace qgpu::encoded::cuda::detail
