#pragma once
// The CUDA encoder of encoded-v1 (since 2026-12-03 the only one: a first encoder with one fixed-size scratch slot
// per stream was slower on the sample and was removed; figures: docs/history/benchmarks-2026-12.md). Same bytes as the CPU reference (stream_codec.hpp: one thread per stream, the same code).
//
// One launch per batch: every tile of the batch at once (a group of at most kMaxGroupStreams streams), so that the
// long rANS streams of the bright-field disk of many tiles run concurrently instead of one group of three tiles
// after another. Each thread makes one pass over its stream's values (stream_stats: sum, range, the exact sparse and
// raw sizes, hence a bound on the encoded size); the block scans the bounds and reserves that many bytes of a
// compact scratch with one atomic add; then each thread encodes into its reservation. The scratch holds about the
// encoded bytes of the batch (not 4 bytes per value); when a group does not fit, the host encodes it again in
// smaller groups (the sums are added once, by the first attempt). Then one block per tile scans the sizes into the
// directory, the host waits once for the tiles' byte counts (the payload is allocated to the exact size) and a
// warp per 32 streams copies them into the payload.
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "device/cuda/buffer_pool.hpp"
#include "device/cuda/device_buffer.hpp"
#include "resident/encoded/cuda/encoded_cuda.hpp"
#include "resident/encoded/layout.hpp"
#include "resident/encoded/live_groups.hpp"

namespace qgpu::encoded::cuda {

// Streams of one launch at most (their scratch offsets: 4 bytes each, 16 MiB).
inline constexpr std::size_t kMaxGroupStreams = std::size_t{1} << 22;
// The compact scratch: this much, or one tile's worst case when larger, or the group's worst case when smaller.
inline constexpr std::size_t kCompactScratch = std::size_t{256} << 20;

// Largest stream the encoder can write for n values of elem bytes: the raw model (model byte, base varint <= 5,
// width byte, n * elem bytes).
inline std::size_t stream_bound_bytes(std::uint32_t n, std::size_t elem) { return 7 + elem * n; }

// Device scratch kept by a caller that encodes many batches (allocated when too small, reused after).
// Its buffers are leased from the device pool (device/cuda/buffer_pool.hpp): the end of a load gives them back
// instead of freeing them (cudaFree synchronises the device; those frees took 1-5 ms of the sample's load on the
// H200), and the next load on that device takes them again.
struct CompactScratch {
  std::unique_ptr<LeasedBuffer> bytes, offsets, cursor, base;
  // Tests: a smaller compact scratch than the default (never below one tile's worst case), so that groups must be
  // encoded again in smaller groups.
  std::size_t max_bytes = 0;
  std::uint64_t tile_bytes_hint = 0;  // reserved bytes per tile of the last group (sizes the next call's groups)
  // The order in which the encoder's blocks take a tile's groups of 32 pixels, densest first (from the sum pattern
  // after the first call; see encode_reserve), uint32 per group; null: pixel order.
  std::unique_ptr<LeasedBuffer> group_order;
  std::unique_ptr<LeasedBuffer> live_list, live_count;  // with live-group marks: the warps that encode
  std::unique_ptr<LeasedBuffer> scan_tmp;                // the tile offsets' device-wide scan
};

// One device buffer that encode_compact fills group after group (each group's payload at the next 16-byte
// boundary), so that a load allocates no payload per group on the encoder's thread (those cudaMallocs stalled it
// for up to 10 ms a load beside the decoder); a group that does not fit gets its own exact-size payload.
struct PayloadArena {
  std::shared_ptr<DeviceBuffer> buf;
  std::size_t used = 0;  // bytes taken (the last group's end, before kPayloadPad)
};

// Stage times of the encoder (CUDA events on its stream, summed over calls) and what it did.
struct EncodeTiming {
  double stats_encode_ms = 0;  // the one kernel: statistics pass, reservation, encode into the scratch
  double offsets_ms = 0;       // per-tile scans of the stream sizes
  double compact_ms = 0;       // copy into the exact-size payload
  double host_wait_ms = 0;     // host blocked on the stream for the sizes (includes the kernels before it)
  double host_alloc_ms = 0;    // payload and directory allocations (cudaMalloc; none for a group in the arena)
  double order_ms = 0;         // host, after the first call: the groups' density order (set_group_order)
  double finish_ms = 0;        // host, after the last frames: scratch freed, arena kept or trimmed, tile refs uploaded
  double trim_ms = 0;          //   of which trimming the payload arena (0: kept or none)
  double release_ms = 0;       //   of which releasing the staging tile and the scratch
  double refs_ms = 0;          //   of which the tile refs' upload and the sum pattern's download
  std::size_t calls = 0, groups = 0, retries = 0;  // retries: groups encoded again because the scratch was short
  std::uint64_t reserved_bytes = 0, payload_bytes = 0;  // sum of the stream bounds; encoded bytes
  EncodeTiming& operator+=(const EncodeTiming& o);
  std::string summary() const;  // one line
};

// Encodes `count` dense frames at d_frames (device, layout dtype, frame-major) as ceil(count / tile) tiles (the last
// one shorter when count is not a multiple of layout.tile), adds every pixel's sum to d_sum_pattern and, when
// d_totals is given, writes each frame's total there (count uint64; for uint8/16 counts with tiles <= 1024 and at
// least 256 pixels summed in the encoder's statistics pass, else by frame_totals). Bytes identical to
// cpu::encode_tile. All work on `stream`; returns when it is done. `timing`, when given, gets this
// call's stage times added. dir_arena (optional): one buffer for the directories of every tile of the resident
// ((P + 1) uint32 per tile; this call's first tile is tile dir_arena_tile0 there), so that a load does not allocate
// one per group on the encoder's thread; the returned groups share it. d_live (optional; frame_pixels a multiple
// of 32): the LiveGroups bits of these frames (tile = layout.tile, words_per_tile = LiveGroups::words_for(P, tile)):
// only the groups of 32 pixels marked in a tile are read and encoded, every other stream is empty, and of those only
// the marked chunks of 16 frames are read where a stream's statistics and sparse model allow. Every chunk of a
// group with a nonzero count must be marked (an unmarked one would be encoded as zeros). payload_arena (optional): where the
// groups' payloads go while they fit (their DeviceTiles share payload_arena->buf). d_given_totals (optional, count
// uint64, device): the frames' totals as their writer summed them (encoded::LiveGroups::totals), copied to d_totals
// instead of summed again.
std::vector<DeviceTiles> encode_compact(const Layout& layout, const void* d_frames, std::size_t count,
                                        std::uint64_t* d_sum_pattern, std::uint64_t* d_totals, cudaStream_t stream,
                                        CompactScratch* scratch, EncodeTiming* timing = nullptr,
                                        const std::shared_ptr<DeviceBuffer>& dir_arena = nullptr,
                                        std::size_t dir_arena_tile0 = 0, const std::uint32_t* d_live = nullptr,
                                        PayloadArena* payload_arena = nullptr,
                                        const std::uint64_t* d_given_totals = nullptr);

// The device scratch encode_compact allocates at most for this layout (admission counts it).
std::size_t compact_scratch_bytes(const Layout& layout);

}  // namespace qgpu::encoded::cuda
