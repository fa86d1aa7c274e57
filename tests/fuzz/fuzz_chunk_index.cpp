// libFuzzer target for the chunk index parser. Input: byte 0 = address size (low nibble) and length size (high
// nibble), bytes 1-8 = object header address (little-endian), the rest = the file image. Any input must end in a
// table, FormatError or Unsupported: never a crash, hang, leak or out-of-bounds access.
#include <cstddef>
#include <cstdint>

#include "core/error.hpp"
#include "io/hdf5/index/parse_chunk_index.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace qgpu::io::h5index;
  if (size < 9) return 0;
  ParseRequest req;
  req.sizes.addr = data[0] & 0x0f;
  req.sizes.len = data[0] >> 4;
  req.header_addr = load_le(data + 1, 8);
  req.max_chunks = std::uint64_t(1) << 20;
  MemoryByteSource src(data + 9, size - 9);
  try {
    parse_chunk_index(src, req);
  } catch (const qgpu::FormatError&) {
  } catch (const Unsupported&) {
  }
  return 0;
}
