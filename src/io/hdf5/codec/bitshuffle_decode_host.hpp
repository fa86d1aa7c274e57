#pragma once
// Host decoder of bitshuffle (HDF5 filter 32008) chunks, LZ4 (liblz4) or zstd (libzstd) blocks, one frame per
// chunk. Every field is checked: header decoded size and block size, each block length (> 0, inside the chunk,
// within the codec's bound), each block decodes to exactly its size, and the chunk ends exactly after the verbatim
// tail. Errors are FormatError with the reason; callers add the file, dataset and frame.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "io/hdf5/codec/bitshuffle_params.hpp"

namespace qgpu::io::codec {

// Decodes one chunk into dst (frame_elems * p.elem_size bytes, in the host's byte order: elements stored
// big-endian, p.big_endian, are swapped). Raises FormatError with the reason.
// Thread-safe (scratch is per thread).
void decode_chunk(const BitshuffleParams& p, std::size_t frame_elems, const std::uint8_t* chunk,
                  std::size_t chunk_bytes, void* dst);

// Many chunks at once: chunk i is base[offset[i], offset[i] + size[i]) and decodes to dest[i].
struct ChunkBatch {
  const std::uint8_t* base = nullptr;
  std::size_t base_bytes = 0;            // bytes readable at base: every chunk must lie inside
  const std::uint64_t* offset = nullptr;  // [n_chunks]
  const std::uint64_t* size = nullptr;    // [n_chunks]
  void* const* dest = nullptr;            // [n_chunks] frame buffers of frame_elems * elem_size bytes
  std::size_t n_chunks = 0;
};

struct ChunkFailure {
  std::size_t chunk = 0;  // index in the batch
  std::string reason;
};

// Decodes the batch on `threads` threads (0 = hardware concurrency). Returns the failure of the smallest failing
// chunk index (chunks after it may be left undecoded), or nothing when all decoded.
std::optional<ChunkFailure> decode_chunks(const BitshuffleParams& p, std::size_t frame_elems, const ChunkBatch& batch,
                                          unsigned threads = 0);

// Same, raising FormatError("chunk <i>: <reason>") on the smallest failing chunk.
void decode_chunks_or_throw(const BitshuffleParams& p, std::size_t frame_elems, const ChunkBatch& batch,
                            unsigned threads = 0);

}  // namespace qgpu::io::codec
