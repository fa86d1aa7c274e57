#pragma once
// CUDA decoders of the encoded-v1 format (the encoder: encode_kernels.hpp): the same stream code as the CPU
// reference (stream_codec.hpp).
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

// Tiles encoded on the device: the payload allocation of a group of tiles and the buffer that holds their
// directories (the group's own, or one shared by every group: encode_compact's dir_arena); refs hold device pointers
// into them (refs[k].dir has frame_pixels + 1 entries).
struct DeviceTiles {
  std::shared_ptr<DeviceBuffer> payload, dir;
  std::vector<TileRef> refs;
};

// Writes the total of each of `count` dense frames at d_frames to d_out (uint64 each). Asynchronous.
void frame_totals(const Layout& layout, const void* d_frames, std::size_t count, std::uint64_t* d_out,
                  cudaStream_t stream = nullptr);

// Queries on the complete set of tiles (d_tiles: layout.tiles() TileRefs in device memory). Each waits for its
// result and raises FormatError when a stream is malformed.
// The masked sums decode with one kernel (masked_sum_kernel.cu); the others once measured beside it were removed
// (docs/design.md, docs/benchmarks.md).
// Weighted sum over npix listed pixels (device arrays) for every scan position into d_out (layout.frames uint64).
void masked_sum(const Layout& layout, const TileRef* d_tiles, const std::uint32_t* d_pixels,
                const std::uint32_t* d_weights, std::size_t npix, std::uint64_t* d_out, cudaStream_t stream = nullptr);
// weight x (frame total - sum over the npix listed pixels) per scan position into d_out: a uniform-weight mask
// summed through the pixels it leaves out (d_totals: the stored frame totals; d_ones: npix weights of 1). Modulo
// 2^64 like every masked sum.
void complement_sum(const Layout& layout, const TileRef* d_tiles, const std::uint64_t* d_totals,
                    const std::uint32_t* d_pixels, const std::uint32_t* d_ones, std::size_t npix,
                    std::uint32_t weight, std::uint64_t* d_out, cudaStream_t stream = nullptr);
// d_inout[i] = d_totals[i] - d_inout[i] for i < n, modulo 2^64 (sums of a mask from totals and its complement's).
// Asynchronous.
void totals_minus(const std::uint64_t* d_totals, std::size_t n, std::uint64_t* d_inout, cudaStream_t stream = nullptr);
// K (1..3) weightings of the same pixels in one decode: d_weights [k][npix], d_out [k][frames] (CoM: det_row,
// det_col weights beside the frame totals).
void masked_sums(const Layout& layout, const TileRef* d_tiles, const std::uint32_t* d_pixels,
                 const std::uint32_t* d_weights, std::size_t npix, int K, std::uint64_t* d_out,
                 cudaStream_t stream = nullptr);
// masked_sums without waiting: sets *d_error (a device int, zeroed by the caller) to 1 on a malformed stream; the
// caller checks it after its own work on `stream` (one wait for a whole product). d_out is zeroed here.
void masked_sums_async(const Layout& layout, const TileRef* d_tiles, const std::uint32_t* d_pixels,
                       const std::uint32_t* d_weights, std::size_t npix, int K, std::uint64_t* d_out, int* d_error,
                       cudaStream_t stream = nullptr);
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
