#include "live/protocol/mpx.hpp"

#include <cstdio>
#include <cstring>

#include "core/error.hpp"

namespace qgpu::live::mpx {

namespace {
std::string printable(const std::uint8_t* p, std::size_t n) {
  std::string s;
  for (std::size_t i = 0; i < n; ++i) {
    if (p[i] >= 32 && p[i] < 127) {
      s += char(p[i]);
    } else {
      char b[8];
      std::snprintf(b, sizeof b, "\\x%02x", p[i]);
      s += b;
    }
  }
  return s;
}
}  // namespace

std::uint64_t payload_bytes(const std::uint8_t* p) {
  const auto fail = [&](const std::string& why) -> std::uint64_t {
    throw FormatError("Merlin TCP message prefix '" + printable(p, kPrefixBytes) + "': " + why);
  };
  if (p[0] != 'M' || p[1] != 'P' || p[2] != 'X' || p[3] != ',') return fail("does not start with 'MPX,'");
  if (p[14] != ',') return fail("no ',' after the 10-digit length");
  std::uint64_t n = 0;
  for (int i = 4; i < 14; ++i) {
    if (p[i] < '0' || p[i] > '9') return fail("the length is not 10 decimal digits");
    n = n * 10 + std::uint64_t(p[i] - '0');
  }
  if (n < 2) return fail("a message of no payload");
  if (n - 1 > kMaxPayload) return fail("a payload of " + std::to_string(n - 1) + " bytes (at most " +
                                       std::to_string(kMaxPayload) + ")");
  return n - 1;
}

std::vector<std::uint8_t> message(const std::uint8_t* payload, std::size_t size) {
  char head[kPrefixBytes + 1];
  std::snprintf(head, sizeof head, "MPX,%010llu,", static_cast<unsigned long long>(size + 1));
  std::vector<std::uint8_t> m(kPrefixBytes + size);
  std::memcpy(m.data(), head, kPrefixBytes);
  if (size) std::memcpy(m.data() + kPrefixBytes, payload, size);
  return m;
}

}  // namespace qgpu::live::mpx
