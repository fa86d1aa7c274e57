// libFuzzer target for the live stream protocols (src/live/protocol): any message bytes must decode or raise
// FormatError naming the problem (never a crash, hang, huge allocation or out-of-bounds read). The first byte picks
// the parser: 0 DECTRIS stream V2 (CBOR), 1 stream V1 (the rest split into parts at "\n--\n"), 2 a Merlin TCP
// prefix, 3 bare CBOR, 4 the plain-LZ4 frame framing.
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "core/error.hpp"
#include "live/protocol/cbor.hpp"
#include "live/protocol/frame_bytes.hpp"
#include "live/protocol/mpx.hpp"
#include "live/protocol/stream1.hpp"
#include "live/protocol/stream2.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace qgpu::live;
  if (size < 1) return 0;
  const std::uint8_t mode = data[0] % 5;
  const std::uint8_t* p = data + 1;
  const std::size_t n = size - 1;
  try {
    switch (mode) {
      case 0: {
        const stream2::Message m = stream2::decode(p, n);
        (void)m.start.metadata.dump();
        if (m.kind == stream2::Kind::image && m.image.size) (void)m.image.data[m.image.size - 1];
        break;
      }
      case 1: {
        std::vector<stream1::Part> parts;
        const std::string_view s(reinterpret_cast<const char*>(p), n), sep("\n--\n");
        std::size_t from = 0;
        for (;;) {
          const std::size_t at = s.find(sep, from);
          const std::size_t end = at == std::string_view::npos ? n : at;
          parts.push_back({p + from, end - from});
          if (at == std::string_view::npos) break;
          from = at + sep.size();
        }
        const stream1::Message m = stream1::decode(parts);
        if (m.kind == stream1::Kind::image && m.blob.size) (void)m.blob.data[m.blob.size - 1];
        break;
      }
      case 2:
        if (n >= mpx::kPrefixBytes) (void)mpx::payload_bytes(p);
        break;
      case 3:
        (void)cbor::parse(p, n);
        break;
      default: {
        if (n < 12) break;
        const std::uint64_t out = frame_bytes::decoded_size(p);
        if (out > (std::uint64_t(1) << 20)) break;  // a real frame's size is checked against the series first
        std::vector<std::uint8_t> o(out);
        frame_bytes::decode_lz4(p, n, o.data(), o.size());
      }
    }
  } catch (const qgpu::FormatError&) {
  } catch (const qgpu::InvalidArgument&) {
  }
  return 0;
}
