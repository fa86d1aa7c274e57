#pragma once
// GPU decoding of HDF5 bitshuffle+LZ4 (filter 32008) chunks, one frame per chunk.
// Chunk layout: io/hdf5/codec/bitshuffle_format.hpp (shared with the host codec).
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/hd.hpp"
#include "io/hdf5/codec/bitshuffle_format.hpp"
#include "resident/encoded/live_groups.hpp"

namespace qgpu::io::cuda {

struct DecodeGeometry {
  std::size_t elem_size = 2;     // bytes per element (1, 2 or 4)
  std::size_t frame_elems = 0;   // elements per chunk
  std::size_t block_elems = 0;   // bitshuffle block size in elements
  // Elements stored big-endian (the HDF5 datatype's byte order): the decode writes them in the host's order
  // (the unshuffle reads the bit planes of stored byte elem_size - 1 - b for output byte b; the tail is reversed).
  bool swap_bytes = false;
  // LZ4 blocks per chunk: full blocks plus one partial block of (n % block) rounded down to 8, if any.
  QGPU_HD std::size_t max_blocks() const { return codec::ChunkGeometry{elem_size, frame_elems, block_elems}.blocks(); }
};

// One batch of compressed chunks already in device memory.
struct DecodeBatch {
  const std::uint8_t* comp = nullptr;        // concatenated chunk bytes
  const std::uint64_t* chunk_offset = nullptr;  // [n] start of each chunk in comp
  const std::uint64_t* chunk_size = nullptr;    // [n]
  const std::uint64_t* dest_frame = nullptr;    // [n] frame index in `out` each chunk decodes to
  std::size_t n_chunks = 0;
  std::uint64_t first_chunk_id = 0;  // id of chunk 0 of this batch, for error reports
};

// Device scratch for block tables: n_chunks * max_blocks entries of (source offset, length).
struct DecodeScratch {
  std::uint64_t* block_src = nullptr;
  std::uint32_t* block_len = nullptr;
  std::size_t capacity_blocks = 0;
};

// Error word in device memory: 0 = fine, else (chunk id << 8) | code, the smallest chunk id wins.
enum DecodeErrorCode : unsigned {
  kHeaderSize = 1,     // decoded size in the header differs from the frame size
  kHeaderBlock = 2,    // block size in the header differs from the dataset's
  kBlockBounds = 3,    // a block length reaches past the chunk (truncated chunk)
  kTrailing = 4,       // bytes left over or missing after the last block
  kLz4Stream = 5,      // an LZ4 block is malformed or decodes to the wrong size
};
std::string describe_decode_error(unsigned long long word);

// How a warp reads its compressed LZ4 block while it parses the tokens (every lane reads every token byte, so
// the latency of those reads is the parse's critical path). All variants accept and produce the same bytes.
enum class DecodeVariant : int {
  kGlobal = 0,      // tokens read from global memory as they are parsed
  kPrefetchL2 = 1,  // the warp first prefetches the block's lines into L2, then parses from global memory
  kStageShared = 2, // blocks of up to kStageBytes are first copied (coalesced) into shared memory and parsed there
};
inline constexpr std::uint32_t kStageBytes = 1024;
inline constexpr DecodeVariant kDefaultDecodeVariant = DecodeVariant::kStageShared;  // fastest on the H200 (docs/benchmarks.md)
const char* decode_variant_name(DecodeVariant v);

// Decodes every chunk of the batch into `out` (frames of frame_elems elements) on `stream`. live.bits (zeroed by the
// caller, frames of `out` counted from its start): also marks the pixel groups with a nonzero value in each chunk
// of 16 frames of each tile (encoded::LiveGroups; the frame must be a multiple of 32 pixels).
void decode_bitshuffle_lz4(const DecodeBatch& batch, const DecodeGeometry& g, void* out,
                           const DecodeScratch& scratch, unsigned long long* d_error, cudaStream_t stream,
                           DecodeVariant variant = kDefaultDecodeVariant, const encoded::LiveGroups& live = {});

}  // namespace qgpu::io::cuda
