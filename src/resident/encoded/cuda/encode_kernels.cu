#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cub/block/block_scan.cuh>
#include <cub/device/device_scan.cuh>
#include <cuda/std/functional>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>

#include "core/error.hpp"
#include "device/cuda/buffer_pool.hpp"
#include "device/cuda/cuda_check.hpp"
#include "resident/encoded/cuda/encode_kernels.hpp"
#include "resident/encoded/stream_codec.hpp"

namespace qgpu::encoded::cuda {

namespace {

constexpr unsigned kEncThreads = 256;
constexpr std::uint32_t kFusedTotalsTile = 1024;  // [2][tile] uint32 frame sums: 8 KiB of shared memory
// Alphabets (escape included) whose rANS symbol words the encoder keeps in shared memory (2 words each per thread,
// 34 KiB per block of 256): values 0..15 (the bright-field disk at low dose) take K <= 16, so 17 symbols; larger
// alphabets use the thread's local memory.
constexpr std::uint32_t kRansSymbols = 17;
constexpr std::uint32_t kRansTableWords = 2 * kRansSymbols * kEncThreads;
static_assert((kRansTableWords + 2 * kFusedTotalsTile) * sizeof(unsigned) + 2048 <= 48 * 1024,
              "encode_reserve's shared memory stays within the default 48 KiB");
// A padding entry of the live list (list_live_warps): a warp of no live stream; the low bits still name its tile.
constexpr std::uint32_t kPadEntry = 1u << 31;
static_assert(kChunkFrames == detail::kStatsAhead, "a mark bit covers one chunk of the statistics pass");

// The stream of `lane` in the warp of live-list entry t * G + g (group g of tile t, G = P / 32 groups per tile).
__device__ std::size_t listed_stream(std::uint32_t entry, std::size_t P, unsigned lane) {
  const std::uint32_t G = static_cast<std::uint32_t>(P / 32);
  return std::size_t{entry / G} * P + std::size_t{entry % G} * 32 + lane;
}

// The statistics pass's hook of a fused launch: the block's frame sums (32 bits: a block holds at most kEncThreads
// pixels of a frame, each < 2^16) of this lane's tile. A chunk where some lane of the tile has many nonzeros (the
// bright-field disk) is summed position by position over the live lanes of one tile (tile_mask: the same n, so
// they call it together) and added by one of them (a native shared atomic, where a 64-bit one is a
// compare-and-swap loop); in the other chunks (the sparse dark field) each lane adds its few nonzero values itself.
// A dense chunk of a whole warp of one tile (the live list's warps: one group of 32 pixels) is summed by a
// transposing butterfly instead: at each of the steps with lane offsets 16, 8, 4 and 2 a lane keeps half of its
// partial sums and adds its partner's for that half (8 + 4 + 2 + 1 shuffles, then one more for offset 1), so lane l
// ends with position l / 2's sum over the 32 lanes, and the even lanes add theirs (a warp reduction per position
// took a dozen instructions of the warp at every position: most of the bright-field streams' statistics pass).
struct FrameSumHook {
  unsigned tile_mask;
  bool leader;
  unsigned* row;  // the block's frame sums of this lane's tile
  __device__ void operator()(std::uint32_t i, std::uint32_t v) const {
    const unsigned sum = __reduce_add_sync(tile_mask, v);  // <= 32 x 65535: no overflow for uint8/16
    if (leader && sum) atomicAdd(row + i, sum);
  }
  __device__ void chunk(std::uint32_t i, const std::uint32_t (&v)[detail::kStatsAhead]) const {
    static_assert(detail::kStatsAhead == 16, "the butterfly halves 16 positions four times");
    if (tile_mask != 0xffffffffu) {
#pragma unroll
      for (std::uint32_t k = 0; k < detail::kStatsAhead; ++k) (*this)(i + k, v[k]);
      return;
    }
    const unsigned lane = threadIdx.x & 31u;
    std::uint32_t a[8], b[4], c[2];
    bool up = lane & 16u;  // keeps the upper half of the positions
#pragma unroll
    for (int j = 0; j < 8; ++j) a[j] = (up ? v[j + 8] : v[j]) + __shfl_xor_sync(0xffffffffu, up ? v[j] : v[j + 8], 16);
    up = lane & 8u;
#pragma unroll
    for (int j = 0; j < 4; ++j) b[j] = (up ? a[j + 4] : a[j]) + __shfl_xor_sync(0xffffffffu, up ? a[j] : a[j + 4], 8);
    up = lane & 4u;
#pragma unroll
    for (int j = 0; j < 2; ++j) c[j] = (up ? b[j + 2] : b[j]) + __shfl_xor_sync(0xffffffffu, up ? b[j] : b[j + 2], 4);
    up = lane & 2u;
    std::uint32_t d = (up ? c[1] : c[0]) + __shfl_xor_sync(0xffffffffu, up ? c[0] : c[1], 2);
    d += __shfl_xor_sync(0xffffffffu, d, 1);  // position lane / 2, summed over the warp (<= 32 x 65535)
    if (!(lane & 1u) && d) atomicAdd(row + i + (lane >> 1), d);
  }
  __device__ bool dense(std::uint32_t nonzeros) const { return __any_sync(tile_mask, nonzeros > kSparseChunk); }
  __device__ void sparse(std::uint32_t i, std::uint32_t v) const { atomicAdd(row + i, v); }
};

// One thread per stream s = tile * P + pixel of the group (adjacent threads read adjacent pixels of a frame:
// coalesced). With group_order (P a multiple of kEncThreads), warp w of a tile takes the pixels of group
// group_order[w] (32 adjacent pixels, still coalesced), densest groups first: a block's warps then cost about the
// same, where a block of adjacent pixels across the bright-field disk's edge held its dark-field warps until its
// bright-field ones were done (barrier waits were a third of the stalls in the H200 profile).
// Pass 1: the stream's statistics (and its sum, when add_sums); the block scans the streams' size bounds and
// reserves them in the scratch with one atomic add on *cursor. A block whose reservation ends past `cap` stops
// (the host sees *cursor > cap and encodes the group again in smaller groups); otherwise each thread encodes its
// stream into its reservation, records where it starts there (offsets[s]) and writes its size to dir.
// kTotals (uint8/16 counts, tiles <= kFusedTotalsTile, P >= kEncThreads: a block spans at most two tiles): the
// statistics pass also sums each frame over the block's pixels into 32-bit shared sums (FrameSumHook: a butterfly or
// a warp reduction per position in dense chunks, a shared atomic per nonzero value in sparse ones) and the block adds
// them to totals (the group's frames, zeroed) when add_sums.
// With live_list (the groups of 32 pixels that hold a nonzero count, encoded::LiveGroups; P a multiple of 32): warp
// w of the grid takes entry w of the list (list_live_warps: each tile's live groups in density order, padded to
// whole blocks, so that a block's warps are of one tile), and blocks past *live_count return at once; the streams
// of the other groups are empty (their directory sizes were zeroed), and the warp's chunk marks (chunk_marks: the
// call's LiveGroups bits, words_per_group words per group and tile) skip the chunks of 16 frames where its group is
// zero. Four blocks per SM (64 registers; a few spilled outside the loops): faster on the sample than 80 registers and
// three blocks (2026-12-04; figures: docs/history/benchmarks-2026-12.md).
// A stream's values in the batch (frame i of the tile at base[i * P]) for the shared encoder; prefetch(i): lanes
// 0..15 and 16..31 each ask L2 for positions i .. i + 15 of their pixels (a warp's 32 pixels lie in one 128-byte line
// per frame, so one instruction covers 16 frames of the group) before the statistics and raw passes read them.
template <class T>
struct FrameValues {
  const T* base;
  std::size_t P;
  std::uint32_t n;
  __device__ std::uint32_t operator()(std::uint32_t i) const { return static_cast<std::uint32_t>(base[i * P]); }
  __device__ void prefetch(std::uint32_t i) const {
    const std::uint32_t k = i + (threadIdx.x & 15u);
    if (k < n) asm volatile("prefetch.global.L2 [%0];" ::"l"(base + std::size_t{k} * P));
  }
};

template <class T, bool kTotals>
__global__ void __launch_bounds__(kEncThreads, 4)
    encode_reserve(const T* __restrict__ frames, std::size_t P, std::uint32_t tile, std::size_t count,
                   std::size_t streams, std::uint8_t* scratch, unsigned long long cap, unsigned long long* cursor,
                   std::uint32_t* offsets, std::uint32_t* dir, unsigned long long* sum_pattern,
                   unsigned long long* totals, int add_sums, const std::uint32_t* __restrict__ group_order,
                   const std::uint32_t* __restrict__ live_list, const unsigned* __restrict__ live_count,
                   const std::uint32_t* __restrict__ chunk_marks, std::uint32_t words_per_group, Policy policy) {
  using Scan = cub::BlockScan<std::uint32_t, kEncThreads>;
  __shared__ typename Scan::TempStorage tmp;
  __shared__ unsigned long long block_at;
  // kRansSymbols x 2 words per thread for the rANS trial's symbol table (detail::RansTableSlot: word j of thread i
  // at i + j x kEncThreads), then (kTotals) [2][tile] frame sums of the block's (at most 2) tiles
  extern __shared__ unsigned shared_words[];
  unsigned* const tot = shared_words + kRansTableWords;
  constexpr unsigned kWarps = kEncThreads / 32;
  std::size_t s = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  std::size_t block_tile = blockIdx.x * static_cast<std::size_t>(blockDim.x) / P;  // the block's first tile
  bool pad = false;
  ChunkMarks marks;  // every chunk, unless the list names the warp's group
  if (live_list) {  // the whole block returns together (before any barrier)
    const std::size_t e0 = std::size_t{blockIdx.x} * kWarps;
    if (e0 >= *live_count) return;
    const std::uint32_t w = live_list[e0 + (threadIdx.x >> 5)];
    pad = (w & kPadEntry) != 0;
    const std::uint32_t g = w & ~kPadEntry;
    marks.w = chunk_marks + std::size_t{g} * words_per_group;  // group g % G of tile g / G
    s = listed_stream(g, P, threadIdx.x & 31u);
    block_tile = (live_list[e0] & ~kPadEntry) / (P / 32);
  } else if (group_order) {  // P is a multiple of the block: the block's warps take groups of one tile in density order
    const std::size_t q = s % P;
    s = s - q + std::size_t{group_order[q >> 5]} * 32 + (q & 31u);
  }
  const bool live = !pad && s < streams;
  const std::size_t t = live ? s / P : 0, p = live ? s % P : 0, first = t * tile;
  const auto n = live ? static_cast<std::uint32_t>(count - first < tile ? count - first : tile) : 0u;
  const FrameValues<T> get{frames + first * P + p, P, n};
  const bool fuse = kTotals && add_sums;
  if (fuse) {
    for (std::uint32_t j = threadIdx.x; j < 2 * tile; j += blockDim.x) tot[j] = 0;
    __syncthreads();
  }
  StreamStats st;
  // Every lane of the warp takes part in the ballot; the live lanes of one tile (the same n) form tile_mask and
  // reduce each position together (each of them calls the hook n times, in order).
  const unsigned live_mask = fuse ? __ballot_sync(0xffffffffu, live) : 0u;
  if (live) {
    if (fuse) {
      const unsigned tile_mask = __match_any_sync(live_mask, static_cast<unsigned long long>(t));
      const bool leader = (threadIdx.x & 31u) == static_cast<unsigned>(__ffs(tile_mask) - 1);
      st = stream_stats(get, n, FrameSumHook{tile_mask, leader, tot + (t - block_tile) * tile}, marks);
    } else {
      st = stream_stats(get, n, NoValueHook{}, marks);
    }
    if (add_sums && st.total) atomicAdd(sum_pattern + p, static_cast<unsigned long long>(st.total));
  }
  std::uint32_t at = 0, block_bytes = 0;  // <= 256 streams x (7 + 4 x 4096) bytes: 32 bits
  Scan(tmp).ExclusiveSum(st.bound, at, block_bytes);
  if (threadIdx.x == 0) block_at = atomicAdd(cursor, static_cast<unsigned long long>(block_bytes));
  __syncthreads();  // also: every thread's statistics pass (and its shared frame sums) is done
  if (fuse)
    for (std::uint32_t j = threadIdx.x; j < 2 * tile; j += blockDim.x)
      if (tot[j]) atomicAdd(totals + (block_tile + j / tile) * tile + j % tile, static_cast<unsigned long long>(tot[j]));
  const unsigned long long b = block_at;
  if (!live || b + block_bytes > cap) return;
  const unsigned long long o = b + at;  // < cap <= 2^32
  // A rANS stream stays where the encoder built it (start: at most its bound - size past o; the compaction copies it
  // from there), not copied byte by byte to o.
  std::uint32_t start = 0;
  const detail::RansTableSlot table{shared_words + threadIdx.x, kEncThreads, kRansSymbols};
  dir[t * (P + 1) + p] = encode_stream_with(st, get, n, scratch + o, &start, table, marks, policy);
  offsets[s] = static_cast<std::uint32_t>(o + start);  // <= b + block_bytes <= cap
}

// Entry i of the tiles' directories -> its tile (the key of the scan by tile).
struct TileOf {
  std::uint32_t entries;  // P + 1 per tile
  __host__ __device__ std::uint32_t operator()(std::uint32_t i) const { return i / entries; }
};

// One block per tile of a group: the tile's live groups of 32 pixels (g < G = P / 32 with a chunk marked in its
// words_per_group words at live + t * words_per_tile + g * words_per_group), in `order` (a permutation of the
// groups, densest first) or in pixel order, as entries t * G + g of `list`, padded with kPadEntry | t * G to a
// multiple of the encoder block's warps, at a place reserved with one atomic add on *count (segments of tiles in
// any order: each stream's bytes do not depend on it).
constexpr unsigned kListThreads = 256;
__global__ void __launch_bounds__(kListThreads)
    list_live_warps(const std::uint32_t* __restrict__ live, std::size_t words_per_tile, std::uint32_t words_per_group,
                    std::uint32_t G, const std::uint32_t* __restrict__ order, std::uint32_t* list, unsigned* count) {
  using Scan = cub::BlockScan<std::uint32_t, kListThreads>;
  __shared__ typename Scan::TempStorage tmp;
  __shared__ unsigned seg;
  constexpr std::uint32_t kWarps = kEncThreads / 32;
  const std::uint32_t t = blockIdx.x;
  const std::uint32_t* bits = live + t * words_per_tile;
  const auto is_live = [&](std::uint32_t g) {
    std::uint32_t any = 0;
    for (std::uint32_t k = 0; k < words_per_group; ++k) any |= bits[std::size_t{g} * words_per_group + k];
    return any ? 1u : 0u;
  };
  std::uint32_t c = 0;
  for (std::uint32_t g = threadIdx.x; g < G; g += kListThreads) c += is_live(g);
  std::uint32_t unused = 0, total = 0;
  Scan(tmp).ExclusiveSum(c, unused, total);
  const std::uint32_t padded = (total + kWarps - 1) / kWarps * kWarps;
  if (threadIdx.x == 0 && padded) seg = atomicAdd(count, padded);
  __syncthreads();  // seg; tmp is reused
  if (!padded) return;
  std::uint32_t carry = 0;
  for (std::uint32_t c0 = 0; c0 < G; c0 += kListThreads) {
    const std::uint32_t q = c0 + threadIdx.x;
    const std::uint32_t g = q < G ? (order ? order[q] : q) : 0;
    const std::uint32_t keep = q < G ? is_live(g) : 0u;
    std::uint32_t at = 0, agg = 0;
    Scan(tmp).ExclusiveSum(keep, at, agg);
    if (keep) list[seg + carry + at] = t * G + g;
    carry += agg;
    __syncthreads();
  }
  for (std::uint32_t j = total + threadIdx.x; j < padded; j += kListThreads) list[seg + j] = kPadEntry | (t * G);
}

constexpr std::uint32_t kCompactAhead = 8;
// A warp per 32 consecutive streams copies them one after another from the scratch into the payload, each lane a
// byte (streams are mostly a few to a few hundred bytes: coalesced, instead of one thread per stream copying bytes
// one by one). With live_list (encode_reserve's): only the listed groups' warps (the others' streams are empty).
__global__ void compact_warps(const std::uint8_t* __restrict__ scratch, const std::uint32_t* __restrict__ offsets,
                              const std::uint32_t* __restrict__ dir, std::size_t P, std::size_t streams,
                              const std::uint64_t* __restrict__ tile_base, std::uint8_t* __restrict__ payload,
                              const std::uint32_t* __restrict__ live_list, const unsigned* __restrict__ live_count) {
  const std::size_t warp = (blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x) >> 5;
  const unsigned lane = threadIdx.x & 31u;
  std::size_t s = warp * 32 + lane;
  if (live_list) {  // a whole warp returns (or none of it)
    if (warp >= *live_count) return;
    const std::uint32_t w = live_list[warp];
    if (w & kPadEntry) return;
    s = listed_stream(w, P, lane);
  }
  std::uint32_t len = 0, src = 0;
  unsigned long long dst = 0;
  if (s < streams) {
    const std::size_t t = s / P, p = s % P;
    const std::uint32_t* d = dir + t * (P + 1);
    const std::uint32_t o = d[p];
    len = d[p + 1] - o;
    if (len) {
      src = offsets[s];
      dst = tile_base[t] + o;
    }
  }
  for (int j = 0; j < 32; ++j) {
    const std::uint32_t lj = __shfl_sync(0xffffffffu, len, j);
    if (lj == 0) continue;  // warp-uniform
    const std::uint32_t sj = __shfl_sync(0xffffffffu, src, j);
    const unsigned long long dj = __shfl_sync(0xffffffffu, dst, j);
    // kCompactAhead bytes per lane in flight (loads first, then the stores): one load at a time waited a memory
    // latency per 32 bytes, most of a long raw stream's copy.
    for (std::uint32_t k = lane; k < lj; k += 32 * kCompactAhead) {
      std::uint8_t b[kCompactAhead];
#pragma unroll
      for (std::uint32_t u = 0; u < kCompactAhead; ++u)
        if (k + 32 * u < lj) b[u] = scratch[sj + k + 32 * u];
#pragma unroll
      for (std::uint32_t u = 0; u < kCompactAhead; ++u)
        if (k + 32 * u < lj) payload[dj + k + 32 * u] = b[u];
    }
  }
}

// Entries of the live list per tile at most: its groups of 32 pixels, padded to whole encoder blocks.
std::size_t list_entries_per_tile(std::size_t P) {
  constexpr std::size_t kWarps = kEncThreads / 32;
  return (P / 32 + kWarps - 1) / kWarps * kWarps;
}

unsigned blocks_of(std::size_t n, unsigned threads) { return static_cast<unsigned>((n + threads - 1) / threads); }

// Grows buf to at least `bytes` (the old contents are not kept); waits for `stream` first, since work queued on it
// may still use the old allocation.
void ensure(std::unique_ptr<LeasedBuffer>& buf, std::size_t bytes, cudaStream_t stream) {
  if (buf && buf->bytes() >= bytes) return;
  if (buf) QGPU_CUDA(cudaStreamSynchronize(stream));
  buf.reset();
  buf = std::make_unique<LeasedBuffer>(std::max<std::size_t>(bytes, 1));
}

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point a) { return std::chrono::duration<double, std::milli>(Clock::now() - a).count(); }

// Events around the kernels of one group, read when the call has finished.
struct GroupEvents {
  cudaEvent_t e[4] = {};
  bool compacted = false;  // e[3] recorded (not for a group encoded again)
  explicit GroupEvents(cudaStream_t s) {
    for (auto& x : e) QGPU_CUDA(cudaEventCreate(&x));
    QGPU_CUDA(cudaEventRecord(e[0], s));
  }
  ~GroupEvents() {
    for (auto& x : e)
      if (x) cudaEventDestroy(x);
  }
  GroupEvents(const GroupEvents&) = delete;
  GroupEvents& operator=(const GroupEvents&) = delete;
  float between(int a, int b) const {
    float ms = 0;
    return cudaEventElapsedTime(&ms, e[a], e[b]) == cudaSuccess ? ms : 0.f;
  }
};

// Whether the encoder takes a tile's groups in ws.group_order (made for this pixel count).
bool ordered(const CompactScratch& ws, std::size_t P) {
  return P % 32 == 0 && ws.group_order && ws.group_order->bytes() == P / 32 * sizeof(std::uint32_t);
}

// The groups of 32 pixels of a tile by decreasing total count so far (ties: pixel order), uploaded to
// ws.group_order for the next calls.
void set_group_order(CompactScratch& ws, const std::uint64_t* d_sum_pattern, std::size_t P, cudaStream_t stream) {
  std::vector<std::uint64_t> pattern(P), group(P / 32, 0);
  QGPU_CUDA(cudaMemcpyAsync(pattern.data(), d_sum_pattern, P * sizeof(std::uint64_t), cudaMemcpyDeviceToHost, stream));
  QGPU_CUDA(cudaStreamSynchronize(stream));
  for (std::size_t p = 0; p < P; ++p) group[p / 32] += pattern[p];
  std::vector<std::uint32_t> order(group.size());
  for (std::uint32_t g = 0; g < order.size(); ++g) order[g] = g;
  std::stable_sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) { return group[a] > group[b]; });
  auto buf = std::make_unique<LeasedBuffer>(order.size() * sizeof(std::uint32_t));
  QGPU_CUDA(cudaMemcpyAsync(buf->data(), order.data(), buf->bytes(), cudaMemcpyHostToDevice, stream));
  QGPU_CUDA(cudaStreamSynchronize(stream));  // order (host memory) is read before it goes
  ws.group_order = std::move(buf);
}

struct Encoder {
  const Layout& layout;
  const void* frames;
  std::size_t count, P, T, elem;
  std::uint64_t* sum_pattern;
  std::uint64_t* totals;  // the call's frames (fused: summed by encode_reserve)
  bool fused;
  cudaStream_t stream;
  CompactScratch& ws;
  EncodeTiming& timing;
  std::vector<std::unique_ptr<GroupEvents>> events;
  std::size_t cap = 0;
  std::shared_ptr<DeviceBuffer> dir_arena;  // the directories of every tile (null: one allocation per group)
  std::size_t dir_arena_tile0 = 0;          // this call's first tile in dir_arena
  const std::uint32_t* live = nullptr;      // the call's LiveGroups bits (null: every group is visited)
  PayloadArena* arena = nullptr;            // where payloads go while they fit (null: one allocation per group)

  // Encodes tiles [t0, t0 + g) of the batch with their directories at dir (shared by the group that owns it).
  // Returns false (and the bytes the group needs) when the scratch was too small; then nothing is returned.
  bool group(std::size_t t0, std::size_t g, const std::shared_ptr<DeviceBuffer>& dir_buf, std::size_t dir_tile0,
             bool add_sums, std::vector<DeviceTiles>& out, unsigned long long* needed) {
    const std::size_t frames_g = std::min(count - t0 * T, g * T), streams = g * P;
    std::uint32_t* dir = dir_buf->as<std::uint32_t>() + dir_tile0 * (P + 1);
    auto* cursor = ws.cursor->as<unsigned long long>();
    auto ev = std::make_unique<GroupEvents>(stream);
    QGPU_CUDA(cudaMemsetAsync(cursor, 0, sizeof(unsigned long long), stream));
    auto* const tot = fused ? reinterpret_cast<unsigned long long*>(totals + t0 * T) : nullptr;
    const std::uint32_t* const order = ordered(ws, P) ? ws.group_order->as<std::uint32_t>() : nullptr;
    // The live groups' warps (list_live_warps; the other streams are empty: their sizes zeroed here), or all.
    std::uint32_t *list = nullptr;
    unsigned* listed = nullptr;
    unsigned blocks = blocks_of(streams, kEncThreads);
    const std::uint32_t wpg = static_cast<std::uint32_t>(LiveGroups::words_per_group(layout.tile));
    const std::size_t wpt = LiveGroups::words_for(P, layout.tile);
    if (live) {
      const std::size_t G = P / 32;
      list = ws.live_list->as<std::uint32_t>();
      listed = ws.live_count->as<unsigned>();
      QGPU_CUDA(cudaMemsetAsync(dir, 0, g * (P + 1) * sizeof(std::uint32_t), stream));
      QGPU_CUDA(cudaMemsetAsync(listed, 0, sizeof(unsigned), stream));
      list_live_warps<<<static_cast<unsigned>(g), kListThreads, 0, stream>>>(
          live + t0 * wpt, wpt, wpg, static_cast<std::uint32_t>(G), order, list, listed);
      QGPU_CUDA_LAUNCHED("encoded list_live_warps");
      blocks = static_cast<unsigned>(g * list_entries_per_tile(P) / (kEncThreads / 32));
    }
    dispatch_count_dtype(layout.dtype, [&](auto z) {
      using V = decltype(z);
      const V* f = reinterpret_cast<const V*>(static_cast<const std::uint8_t*>(frames) + t0 * T * P * elem);
      const auto launch = [&](auto kernel, std::size_t smem) {
        kernel<<<blocks, kEncThreads, smem, stream>>>(
            f, P, layout.tile, frames_g, streams, ws.bytes->as<std::uint8_t>(), cap, cursor,
            ws.offsets->as<std::uint32_t>(), dir, reinterpret_cast<unsigned long long*>(sum_pattern), tot,
            add_sums ? 1 : 0, !live && P % kEncThreads == 0 ? order : nullptr, list, listed,
            live ? live + t0 * wpt : nullptr, wpg, layout.policy);
      };
      constexpr std::size_t tables = kRansTableWords * sizeof(unsigned);
      if (fused)
        launch(encode_reserve<V, true>, tables + 2 * T * sizeof(unsigned));
      else
        launch(encode_reserve<V, false>, tables);
    });
    QGPU_CUDA_LAUNCHED("encode_reserve");
    QGPU_CUDA(cudaEventRecord(ev->e[1], stream));
    {
      // One scan by tile over every tile's sizes (decoupled look-back: many blocks, where a block per tile walked
      // its 36864 sizes in 18 dependent steps); dir[P] of a tile, the entry after its sizes, gets its total.
      const auto keys = thrust::make_transform_iterator(thrust::make_counting_iterator<std::uint32_t>(0),
                                                        TileOf{static_cast<std::uint32_t>(P + 1)});
      const std::uint32_t items = static_cast<std::uint32_t>(g * (P + 1));  // <= 4M streams a launch + g
      std::size_t tmp_bytes = 0;
      QGPU_CUDA(cub::DeviceScan::ExclusiveSumByKey(nullptr, tmp_bytes, keys, dir, dir, items, ::cuda::std::equal_to<>{},
                                                   stream));
      ensure(ws.scan_tmp, tmp_bytes, stream);
      QGPU_CUDA(cub::DeviceScan::ExclusiveSumByKey(ws.scan_tmp->data(), tmp_bytes, keys, dir, dir, items,
                                                   ::cuda::std::equal_to<>{}, stream));
    }
    QGPU_CUDA_LAUNCHED("encoded tile_offsets");
    QGPU_CUDA(cudaEventRecord(ev->e[2], stream));
    // The sizes: the cursor (all blocks' reservations) and each tile's payload bytes (dir[P] of each tile).
    std::vector<std::uint32_t> tile_bytes(g);
    unsigned long long used = 0;
    QGPU_CUDA(cudaMemcpyAsync(&used, cursor, sizeof used, cudaMemcpyDeviceToHost, stream));
    QGPU_CUDA(cudaMemcpy2DAsync(tile_bytes.data(), sizeof(std::uint32_t), dir + P, (P + 1) * sizeof(std::uint32_t),
                                sizeof(std::uint32_t), g, cudaMemcpyDeviceToHost, stream));
    const auto w0 = Clock::now();
    sleep_until_done(stream);  // (the encoder thread waits through most of a load: no spinning core)
    timing.host_wait_ms += ms_since(w0);
    ++timing.groups;
    ws.tile_bytes_hint = (used + g - 1) / g;
    if (used > cap) {
      *needed = used;
      ++timing.retries;
      events.push_back(std::move(ev));
      return false;
    }
    timing.reserved_bytes += used;
    std::vector<std::uint64_t> base(g);
    std::uint64_t total = 0;
    for (std::size_t k = 0; k < g; ++k) {
      base[k] = total;
      total += tile_bytes[k];
    }
    timing.payload_bytes += total;
    DeviceTiles tiles;
    tiles.dir = dir_buf;
    std::size_t at = 0;  // the group's first byte in tiles.payload
    if (arena && arena->buf && arena->used <= arena->buf->bytes() &&
        total + kPayloadPad <= arena->buf->bytes() - arena->used) {
      tiles.payload = arena->buf;
      at = arena->used;
      arena->used = std::min(arena->buf->bytes(), (at + total + 15) / 16 * 16);
    } else {
      const auto a0 = Clock::now();
      tiles.payload = pooled_buffer(total + kPayloadPad);  // (back to the pool with the resident)
      timing.host_alloc_ms += ms_since(a0);
    }
    for (auto& b : base) b += at;
    // base (pageable) is staged before the call returns; an earlier group's compaction that read ws.base ran before
    // this copy (same stream, and the host waited above).
    QGPU_CUDA(cudaMemcpyAsync(ws.base->data(), base.data(), g * sizeof(std::uint64_t), cudaMemcpyHostToDevice,
                              stream));
    // the warps of encode_reserve's list (list, listed: still this group's), or all
    compact_warps<<<list ? static_cast<unsigned>(g * list_entries_per_tile(P) * 32 / kEncThreads)
                         : blocks_of(streams, kEncThreads),
                    kEncThreads, 0, stream>>>(
        ws.bytes->as<std::uint8_t>(), ws.offsets->as<std::uint32_t>(), dir, P, streams, ws.base->as<std::uint64_t>(),
        tiles.payload->as<std::uint8_t>(), list, listed);
    QGPU_CUDA_LAUNCHED("encoded compact_warps");
    QGPU_CUDA(cudaEventRecord(ev->e[3], stream));
    ev->compacted = true;
    for (std::size_t k = 0; k < g; ++k) {
      const auto len = static_cast<std::uint32_t>(std::min(T, frames_g - k * T));
      tiles.refs.push_back({tiles.payload->as<std::uint8_t>() + base[k], dir + k * (P + 1), len, 0});
    }
    out.push_back(std::move(tiles));
    events.push_back(std::move(ev));
    return true;
  }

  // Tiles [t0, t0 + g): one directory allocation; on a short scratch the same tiles again in groups sized from what
  // the first attempt needed (the sums were added by it), halving while a group still does not fit (a single tile
  // always fits: cap >= P x the largest stream).
  void run(std::size_t t0, std::size_t g, std::vector<DeviceTiles>& out) {
    std::shared_ptr<DeviceBuffer> dir = dir_arena;
    std::size_t base = dir_arena_tile0 + t0;  // tile t0's directory in dir
    if (!dir) {
      const auto a0 = Clock::now();
      dir = std::make_shared<DeviceBuffer>(g * (P + 1) * sizeof(std::uint32_t));
      timing.host_alloc_ms += ms_since(a0);
      base = 0;
    }
    unsigned long long needed = 0;
    if (group(t0, g, dir, base, true, out, &needed)) return;
    std::size_t sub = std::max<std::size_t>(1, static_cast<std::size_t>(double(g) * double(cap) / double(needed) * 0.9));
    for (std::size_t k = 0; k < g;) {
      const std::size_t n = std::min(sub, g - k);
      if (group(t0 + k, n, dir, base + k, false, out, &needed)) {
        k += n;
      } else {
        if (n == 1) throw Error("encoded: one tile does not fit the encoder scratch");  // cannot happen (cap)
        sub = std::max<std::size_t>(1, n / 2);
      }
    }
  }
};

}  // namespace

EncodeTiming& EncodeTiming::operator+=(const EncodeTiming& o) {
  stats_encode_ms += o.stats_encode_ms;
  offsets_ms += o.offsets_ms;
  compact_ms += o.compact_ms;
  host_wait_ms += o.host_wait_ms;
  host_alloc_ms += o.host_alloc_ms;
  order_ms += o.order_ms;
  finish_ms += o.finish_ms;
  trim_ms += o.trim_ms;
  release_ms += o.release_ms;
  refs_ms += o.refs_ms;
  calls += o.calls;
  groups += o.groups;
  retries += o.retries;
  reserved_bytes += o.reserved_bytes;
  payload_bytes += o.payload_bytes;
  return *this;
}

std::string EncodeTiming::summary() const {
  char s[512];
  std::snprintf(s, sizeof s,
                "stats+encode %.2f ms, tile offsets %.2f ms, compact %.2f ms (GPU); host waits %.2f ms, allocations "
                "%.2f ms, group order %.2f ms, finish %.2f ms (arena trim %.2f ms, release %.2f ms, refs %.2f ms); %zu "
                "calls, %zu groups, %zu retried; reserved %.3f GB, payload %.3f GB",
                stats_encode_ms, offsets_ms, compact_ms, host_wait_ms, host_alloc_ms, order_ms, finish_ms, trim_ms,
                release_ms,
                refs_ms, calls,
                groups, retries,
                double(reserved_bytes) / 1e9, double(payload_bytes) / 1e9);
  return s;
}

std::size_t compact_scratch_bytes(const Layout& layout) {
  const std::size_t P = layout.frame_pixels, elem = dtype_size(layout.dtype);
  const std::size_t one_tile = P * stream_bound_bytes(layout.tile, elem);
  const std::size_t all = layout.tiles() * one_tile;
  const std::size_t cap = std::min(all, std::max(kCompactScratch, one_tile));
  const std::size_t group_tiles = std::min(layout.tiles(), std::max<std::size_t>(1, kMaxGroupStreams / P));
  const std::size_t list =
      LiveGroups::applies(P) ? group_tiles * list_entries_per_tile(P) * sizeof(std::uint32_t) + 4 : 0;
  return cap + group_tiles * P * sizeof(std::uint32_t) + group_tiles * sizeof(std::uint64_t) + 8 + list;
}

std::vector<DeviceTiles> encode_compact(const Layout& layout, const void* d_frames, std::size_t count,
                                        std::uint64_t* d_sum_pattern, std::uint64_t* d_totals, cudaStream_t stream,
                                        CompactScratch* reuse, EncodeTiming* timing,
                                        const std::shared_ptr<DeviceBuffer>& dir_arena, std::size_t dir_arena_tile0,
                                        const std::uint32_t* d_live, PayloadArena* payload_arena,
                                        const std::uint64_t* d_given_totals) {
  validate(layout);
  if (d_live && !LiveGroups::applies(layout.frame_pixels))
    throw InvalidArgument("encoded: live-group marks need frames of a multiple of 32 pixels, not " +
                          std::to_string(layout.frame_pixels));
  std::vector<DeviceTiles> out;
  if (count == 0) return out;
  const std::size_t call_tiles = (count + layout.tile - 1) / layout.tile;
  if (dir_arena && (dir_arena_tile0 + call_tiles) * (layout.frame_pixels + 1) * sizeof(std::uint32_t) >
                       dir_arena->bytes())
    throw InvalidArgument("encoded: the directory arena holds fewer tiles than this call ends at");
  CompactScratch local;
  CompactScratch& ws = reuse ? *reuse : local;
  // (ws.tile_bytes_hint: the reserved bytes per tile of the previous group, which sizes the groups of this call.)
  EncodeTiming t;
  t.calls = 1;
  const std::size_t elem = dtype_size(layout.dtype);
  // The frame totals: summed in the statistics pass when a block spans at most two tiles of uint8/16 counts (no
  // overflow of a warp's 32-bit sum), else by frame_totals (one more pass over the frames).
  // Given totals (the decoder's) are copied instead.
  const bool fused = d_totals && !d_given_totals && elem <= 2 && layout.tile <= kFusedTotalsTile &&
                     layout.frame_pixels >= kEncThreads;
  if (d_totals && d_given_totals)
    QGPU_CUDA(cudaMemcpyAsync(d_totals, d_given_totals, count * sizeof(std::uint64_t), cudaMemcpyDeviceToDevice,
                              stream));
  else if (fused)
    QGPU_CUDA(cudaMemsetAsync(d_totals, 0, count * sizeof(std::uint64_t), stream));
  else if (d_totals)
    frame_totals(layout, d_frames, count, d_totals, stream);
  Encoder e{layout, d_frames, count, layout.frame_pixels, layout.tile, elem, d_sum_pattern, d_totals, fused,
            stream, ws, t, {}, 0, dir_arena, dir_arena_tile0, d_live, payload_arena};
  const std::size_t P = e.P, T = e.T;
  const std::size_t ntiles = (count + T - 1) / T;
  const std::size_t group = std::min(ntiles, std::max<std::size_t>(1, kMaxGroupStreams / P));
  // The scratch: kCompactScratch, at least one tile's worst case, at most this call's worst case. validate() bounds
  // one tile's worst case (<= P x stream_slot_bytes(tile)) by 4 GiB: 32-bit offsets.
  const std::size_t one_tile = P * stream_bound_bytes(layout.tile, e.elem);
  e.cap = std::min(ntiles * one_tile, std::max(kCompactScratch, one_tile));
  if (ws.max_bytes) e.cap = std::min(e.cap, std::max(ws.max_bytes, one_tile));
  ensure(ws.bytes, e.cap, stream);
  if (!ws.max_bytes) e.cap = ws.bytes->bytes();  // a larger kept scratch is used whole
  if (e.cap > (std::size_t{1} << 32)) e.cap = std::size_t{1} << 32;
  ensure(ws.offsets, group * P * sizeof(std::uint32_t), stream);
  ensure(ws.base, group * sizeof(std::uint64_t), stream);
  ensure(ws.cursor, sizeof(unsigned long long), stream);
  if (d_live) {  // a group's list: each tile's groups of 32 pixels, padded to whole encoder blocks
    ensure(ws.live_list, group * list_entries_per_tile(P) * sizeof(std::uint32_t), stream);
    ensure(ws.live_count, sizeof(unsigned), stream);
  }
  // Groups of at most `group` tiles, fewer when the previous group's bounds say that they would not fit (data less
  // sparse than the scratch was sized for: no failed attempt per batch).
  std::size_t per = group;
  if (ws.tile_bytes_hint)
    per = std::clamp<std::size_t>(static_cast<std::size_t>(0.9 * double(e.cap) / double(ws.tile_bytes_hint)), 1, group);
  for (std::size_t t0 = 0; t0 < ntiles; t0 += per) e.run(t0, std::min(per, ntiles - t0), out);
  sleep_until_done(stream);
  // For the next calls with this scratch (none come to a scratch of this call's own).
  if (reuse && !ordered(ws, P) && P % 32 == 0 && d_sum_pattern) {
    const auto o0 = Clock::now();
    set_group_order(ws, d_sum_pattern, P, stream);
    t.order_ms += ms_since(o0);
  }
  for (const auto& ev : e.events) {
    t.stats_encode_ms += ev->between(0, 1);
    t.offsets_ms += ev->between(1, 2);
    if (ev->compacted) t.compact_ms += ev->between(2, 3);
  }
  if (timing) *timing += t;
  return out;
}

}  // namespace qgpu::encoded::cuda
