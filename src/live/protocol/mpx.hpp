#pragma once
// Merlin TCP framing (LiberTEM-live merlin/sim.py, LiberTEM-rs libertem_qd_mpx; ../shared/LIVE.md): every message on
// the data port 6342 is "MPX," + 10 decimal digits + "," + payload, the number counting the payload plus that comma.
// After STARTACQUISITION the first payload is the acquisition header ("HDR,...End"), then one MQ1 frame (header +
// pixels, exactly as in a .mib file) per message.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace qgpu::live::mpx {

inline constexpr std::size_t kPrefixBytes = 15;
inline constexpr std::uint64_t kMaxPayload = std::uint64_t(1) << 30;  // a 24-bit quad raw frame is ~1.5 MiB

// Payload bytes announced by a 15-byte prefix. FormatError naming the bytes when it is not "MPX,<10 digits>,", or the
// length is 0 or beyond kMaxPayload.
std::uint64_t payload_bytes(const std::uint8_t* prefix);

// One message: prefix + payload.
std::vector<std::uint8_t> message(const std::uint8_t* payload, std::size_t size);

}  // namespace qgpu::live::mpx
