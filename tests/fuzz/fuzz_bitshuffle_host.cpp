// libFuzzer harness for the host bitshuffle decoder: any chunk bytes under any dataset parameters must either
// decode or raise FormatError (never crash, hang or touch memory outside the chunk and the frame; ASan/UBSan
// watch). A chunk that decodes must survive a round trip: encoding the frame and decoding it again gives the frame.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "core/error.hpp"
#include "fuzz_input.hpp"
#include "io/hdf5/codec/bitshuffle_decode_host.hpp"
#include "io/hdf5/codec/bitshuffle_encode_host.hpp"

using namespace qgpu;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < fuzz::kPrefixBytes) return 0;
  const fuzz::FuzzCase c = fuzz::parse_prefix(data);
  // The chunk in its own allocation, so that ASan sees any read past its end.
  const std::size_t n = size - fuzz::kPrefixBytes;
  std::vector<std::uint8_t> chunk(data + fuzz::kPrefixBytes, data + size);
  std::vector<std::uint8_t> frame(c.frame_elems * c.params.elem_size);
  try {
    io::codec::decode_chunk(c.params, c.frame_elems, chunk.data(), n, frame.data());
  } catch (const FormatError&) {
    return 0;
  }
  const std::vector<std::uint8_t> again = io::codec::encode_chunk(c.params, c.frame_elems, frame.data());
  std::vector<std::uint8_t> back(frame.size());
  io::codec::decode_chunk(c.params, c.frame_elems, again.data(), again.size(), back.data());
  if (back != frame) std::abort();
  // The batch API on the same chunk (one thread: libFuzzer runs single-threaded).
  const std::uint64_t off = 0, sz = n;
  void* dest = back.data();
  io::codec::ChunkBatch b{chunk.data(), chunk.size(), &off, &sz, &dest, 1};
  if (io::codec::decode_chunks(c.params, c.frame_elems, b, 1) || back != frame) std::abort();
  return 0;
}
