#pragma once
// GPU decoding of plain frame records (a frame's elements as stored, any byte order and alignment in the batch), and
// the byte swap of big-endian elements after a decoder that restores the stored bytes (bitshuffle).
#include <cuda_runtime.h>

#include <cstddef>

#include "io/hdf5/cuda/bitshuffle_lz4_decode.hpp"

namespace qgpu::io::cuda {

// Copies each record of the batch into its frame of `out` (frames of frame_elems elements of elem_size bytes),
// swapping the bytes of each element when big_endian. A record whose size is not the frame's reports kHeaderSize
// for its chunk id in d_error (the smallest id wins).
void decode_plain(const DecodeBatch& batch, std::size_t elem_size, std::size_t frame_elems, bool big_endian, void* out,
                  unsigned long long* d_error, cudaStream_t stream);

// Reverses the bytes of each of the `elems` elements of elem_size (2 or 4) bytes at d_data, in place.
void swap_bytes(void* d_data, std::size_t elem_size, std::size_t elems, cudaStream_t stream);

}  // namespace qgpu::io::cuda
