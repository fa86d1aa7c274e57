#pragma once
// Host encoder of bitshuffle (HDF5 filter 32008) chunks, byte-compatible with the HDF5 plugin: same header, block
// framing and verbatim tail; LZ4 blocks from LZ4_compress_default (the plugin's call), zstd blocks from libzstd at
// p.zstd_level. Chunks written with H5Dwrite_chunk into a dataset carrying the filter read back through the plugin.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "io/hdf5/codec/bitshuffle_params.hpp"

namespace qgpu::io::codec {

// Largest chunk encode_chunk can produce for a frame of frame_elems elements.
std::size_t max_encoded_bytes(const BitshuffleParams& p, std::size_t frame_elems);

// Encodes one frame (frame_elems * p.elem_size bytes at src, in host order; the chunk holds them big-endian when
// p.big_endian) into dst (capacity >= max_encoded_bytes).
// Returns the chunk's size. Raises InvalidArgument on a too small dst, FormatError on bad parameters.
std::size_t encode_chunk(const BitshuffleParams& p, std::size_t frame_elems, const void* src, std::uint8_t* dst,
                         std::size_t dst_capacity);
std::vector<std::uint8_t> encode_chunk(const BitshuffleParams& p, std::size_t frame_elems, const void* src);

// Encodes n_frames consecutive frames at `frames` on `threads` threads (0 = hardware concurrency): out[i] is the
// chunk of frame i (out is resized to n_frames; its buffers are reused).
void encode_chunks(const BitshuffleParams& p, std::size_t frame_elems, const void* frames, std::size_t n_frames,
                   std::vector<std::vector<std::uint8_t>>& out, unsigned threads = 0);

}  // namespace qgpu::io::codec
