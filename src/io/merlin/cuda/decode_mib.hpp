#pragma once
// GPU decoding of Merlin .mib frame payloads (binary big-endian, 1-bit unpacking, raw unscrambling and quad
// assembly): the same per-pixel mapping as the host decoder (io/merlin/mib_decode.hpp), identical bytes.
#include <cuda_runtime.h>

#include <string>

#include "io/hdf5/cuda/bitshuffle_lz4_decode.hpp"  // io::cuda::DecodeBatch
#include "io/merlin/pixel_format.hpp"

namespace qgpu::io::merlin::cuda {

// Error word (optional, device memory): 0 = fine, else (frame id << 8) | code, the smallest frame id wins
// (frame id = batch.first_chunk_id + i). The frame is not written.
enum MibDecodeError : unsigned {
  kPayloadSize = 1,  // chunk_size[i] differs from f.payload_bytes
};
std::string describe_mib_decode_error(unsigned long long word);

// Decodes every frame of the batch: comp holds the batch's bytes in device memory, chunk_offset[i] the start of
// frame i's PAYLOAD (after its header) in comp, chunk_size[i] its bytes (= f.payload_bytes), dest_frame[i] the
// frame index in `out` (frames of f.rows x f.cols of f.out_dtype). One thread per output pixel, frames over the
// grid's y dimension; reads and writes are coalesced along rows. Asynchronous on `stream`.
void decode_mib_frames(const io::cuda::DecodeBatch& batch, const PixelFormat& f, void* out, cudaStream_t stream,
                       unsigned long long* d_error = nullptr);

}  // namespace qgpu::io::merlin::cuda
