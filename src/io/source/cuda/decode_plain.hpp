#pragma once
// GPU decoding of plain frame records: a frame's elements as stored, any byte order and alignment in the batch.
#include <cuda_runtime.h>

#include <cstddef>

#include "io/hdf5/cuda/bitshuffle_lz4_decode.hpp"

namespace qgpu::io::cuda {

// Copies each record of the batch into its frame of `out` (frames of frame_elems elements of elem_size bytes),
// swapping the bytes of each element when big_endian; elem_size 8 (float64 records) writes float32 frames. A
// record whose size is not the frame's reports kHeaderSize
// for its chunk id in d_error (the smallest id wins).
void decode_plain(const DecodeBatch& batch, std::size_t elem_size, std::size_t frame_elems, bool big_endian, void* out,
                  unsigned long long* d_error, cudaStream_t stream);

}  // namespace qgpu::io::cuda
