#pragma once
// Reads the messages of an object header (version 1, or version 2 "OHDR" with "OCHK" continuation blocks),
// following continuation messages; checksums of version 2 blocks are verified.
#include <cstdint>
#include <vector>

#include "io/hdf5/index/byte_source.hpp"
#include "io/hdf5/index/decode.hpp"

namespace qgpu::io::h5index {

enum MessageType : std::uint16_t { kDataspace = 0x01, kFilterPipeline = 0x0B, kLayout = 0x08, kContinuation = 0x10 };

struct HeaderMessage {
  std::uint16_t type = 0;
  std::uint8_t flags = 0;  // bit 1: shared (stored elsewhere)
  std::vector<std::uint8_t> data;
};

// The messages of the header at (relative) address `addr` whose type is in `wanted`.
std::vector<HeaderMessage> read_object_header(const ByteSource& src, const FileSizes& sizes, std::uint64_t addr,
                                              const std::vector<std::uint16_t>& wanted);

}  // namespace qgpu::io::h5index
