// libFuzzer target for the Merlin header parsers and the host decoder. Byte 0: bit 0 chooses the .hdr parser
// (set) or the frame header parser; for frame headers, byte 1 picks the .hdr counter depth passed to pixel_format
// (0, 1, 6, 12, 24) and the rest is the frame (header + payload). A frame whose payload is in the input is decoded;
// a decoded frame that re-encodes (counts within the depth) must decode to itself again. Any input must end in a
// result or FormatError / DTypeError: never a crash, hang, leak or out-of-bounds access.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "core/error.hpp"
#include "io/merlin/mib_decode.hpp"
#include "io/merlin/mib_header.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace qgpu::io::merlin;
  if (size < 2) return 0;
  const std::uint8_t* body = data + 2;
  const std::size_t n = size - 2;
  try {
    if (data[0] & 1) {
      parse_acquisition_header(body, n, "fuzz.hdr");
      return 0;
    }
    static constexpr std::uint32_t kDepths[5] = {0, 1, 6, 12, 24};
    const FrameHeader h = parse_frame_header(body, n, Where{"fuzz.mib", 0, 0});
    const PixelFormat f = pixel_format(h, kDepths[data[1] % 5], Where{"fuzz.mib", 0, 0});
    if (f.payload_bytes > n - h.header_bytes || f.frame_bytes_out() > (std::uint64_t(64) << 20)) return 0;
    std::vector<std::uint8_t> frame(f.frame_bytes_out()), again(f.frame_bytes_out()), payload(f.payload_bytes);
    decode_frame_host(f, body + h.header_bytes, frame.data());
    try {
      encode_frame_host(f, frame.data(), payload.data());
    } catch (const qgpu::InvalidArgument&) {
      return 0;  // counts above the counter depth (a corrupt payload) do not re-encode
    }
    decode_frame_host(f, payload.data(), again.data());
    if (frame != again) std::abort();
  } catch (const qgpu::FormatError&) {
  } catch (const qgpu::DTypeError&) {
  }
  return 0;
}
