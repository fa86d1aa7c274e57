#pragma once
// CUDA encoder and decoders of the encoded-v1 format: the same stream code as the CPU reference
// (stream_codec.hpp), one GPU thread per stream.
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "device/cuda/device_buffer.hpp"
#include "resident/encoded/cpu/encoded_cpu.hpp"
#include "resident/encoded/format.hpp"
#include "resident/encoded/layout.hpp"

namespace qgpu::encoded::cuda {

// Tiles encoded on the device: one payload and one directory allocation for a group of tiles; refs hold device
// pointers into them (refs[k].dir has frame_pixels + 1 entries).
struct DeviceTiles {
  std::shared_ptr<DeviceBuffer> payload, dir;
  std::vector<TileRef> refs;
  std::size_t bytes() const { return (payload ? payload->bytes() : 0) + (dir ? dir->bytes() : 0); }
};

// The encoder's device scratch (per-stream slots of a group of tiles, the group's tile offsets), kept by a caller
// that encodes many batches so that it is allocated once.
struct EncodeScratch {
  std::unique_ptr<DeviceBuffer> slots, base;
};

// Encodes `count` dense frames at d_frames (device memory, layout dtype, frame-major) as ceil(count / tile) tiles,
// the last one shorter when count is not a multiple of layout.tile, and adds every pixel's sum over these frames
// to d_sum_pattern (frame_pixels uint64). Bytes identical to cpu::encode_tile. All work on `stream`, synchronous
// on it (the host waits once per group of tiles for their sizes, and at the end); no device-wide synchronisation
// when `scratch` is given and already large enough.
std::vector<DeviceTiles> encode(const Layout& layout, const void* d_frames, std::size_t count,
                                std::uint64_t* d_sum_pattern, cudaStream_t stream = nullptr,
                                EncodeScratch* scratch = nullptr);

// Writes the total of each of `count` dense frames at d_frames to d_out (uint64 each). Asynchronous.
void frame_totals(const Layout& layout, const void* d_frames, std::size_t count, std::uint64_t* d_out,
                  cudaStream_t stream = nullptr);

// Queries on the complete set of tiles (d_tiles: layout.tiles() TileRefs in device memory). Each waits for its
// result and raises FormatError when a stream is malformed.
// The masked-sum kernel: `fast` (masked_sum_kernel.cu, the default; rANS bytes one load each), `fast_window` (the
// same with rANS bytes from a prefetched register window of aligned words), `fast_ilp` (masked_sum_ilp_kernel.cu:
// two streams per lane interleaved, smaller shared tables, 3 blocks per SM, escape bytes loaded ahead),
// `fast_ilp_window` (the same with fast_window's renormalisation bytes) or the first `lockstep` kernel
// (generic stream cursors), kept so that bench_encoded_cuda measures all in one run. All give the same integers.
enum class SumKernel { fast, fast_window, lockstep, fast_ilp, fast_ilp_window };
inline constexpr SumKernel kDefaultSumKernel = SumKernel::fast;
// The kernel the products use (EncodedResident::masked_sums, the encoded CoM): QGPU_SUM_KERNEL = fast,
// fast_window, fast_ilp, fast_ilp_window or lockstep when set (to compare whole products without a rebuild), else
// kDefaultSumKernel; InvalidArgument naming any other value.
SumKernel query_sum_kernel();
const char* sum_kernel_name(SumKernel k);
// Weighted sum over npix listed pixels (device arrays) for every scan position into d_out (layout.frames uint64).
void masked_sum(const Layout& layout, const TileRef* d_tiles, const std::uint32_t* d_pixels,
                const std::uint32_t* d_weights, std::size_t npix, std::uint64_t* d_out, cudaStream_t stream = nullptr,
                SumKernel kernel = kDefaultSumKernel);
// K (1..3) weightings of the same pixels in one decode: d_weights [k][npix], d_out [k][frames] (CoM: det_row,
// det_col weights beside the frame totals).
void masked_sums(const Layout& layout, const TileRef* d_tiles, const std::uint32_t* d_pixels,
                 const std::uint32_t* d_weights, std::size_t npix, int K, std::uint64_t* d_out,
                 cudaStream_t stream = nullptr, SumKernel kernel = kDefaultSumKernel);
// masked_sums without waiting: sets *d_error (a device int, zeroed by the caller) to 1 on a malformed stream; the
// caller checks it after its own work on `stream` (one wait for a whole product). d_out is zeroed here.
void masked_sums_async(const Layout& layout, const TileRef* d_tiles, const std::uint32_t* d_pixels,
                       const std::uint32_t* d_weights, std::size_t npix, int K, std::uint64_t* d_out, int* d_error,
                       cudaStream_t stream = nullptr, SumKernel kernel = kDefaultSumKernel);
// Frame `index` decoded to dense native counts at d_out (frame_pixels values).
void decode_frame(const Layout& layout, const TileRef* d_tiles, std::size_t index, void* d_out,
                  cudaStream_t stream = nullptr);
// The npix listed pixels (device array) at every scan position to d_out, native dtype, [j][frame].
void decode_pixels(const Layout& layout, const TileRef* d_tiles, const std::uint32_t* d_pixels, std::size_t npix,
                   void* d_out, cudaStream_t stream = nullptr);
// A scan x detector rectangle decoded to dense native counts at d_out ([row][col][det_row][det_col]).
void decode_region(const Layout& layout, const TileRef* d_tiles, const cpu::RegionRequest& r, void* d_out,
                   cudaStream_t stream = nullptr);

}  // namespace qgpu::encoded::cuda
