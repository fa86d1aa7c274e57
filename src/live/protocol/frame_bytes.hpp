#pragma once
// The 12-byte header of the HDF5 bitshuffle/LZ4 framing that DECTRIS streams send frames in (u64 BE decoded bytes,
// u32 BE block bytes; io/hdf5/codec/bitshuffle_format.hpp), and the plain-LZ4 variant ("lz4": the same header, then
// blocks of u32 BE compressed size + LZ4 block, no bit shuffle; the HDF5 LZ4 filter's framing), decoded on the host.
#include <cstddef>
#include <cstdint>
#include <vector>

namespace qgpu::live::frame_bytes {

// The decoded size / block bytes from the header (the caller checked there are 12 bytes).
std::uint64_t decoded_size(const std::uint8_t* p);
std::uint32_t block_bytes(const std::uint8_t* p);

// Decodes an "lz4" frame into out (exactly out_size bytes). FormatError naming the block on anything malformed.
void decode_lz4(const std::uint8_t* data, std::size_t size, std::uint8_t* out, std::size_t out_size);

// Encodes plain bytes into the "lz4" framing (for the simulator and tests), blocks of `block` bytes.
std::vector<std::uint8_t> encode_lz4(const std::uint8_t* data, std::size_t size, std::size_t block);

}  // namespace qgpu::live::frame_bytes
