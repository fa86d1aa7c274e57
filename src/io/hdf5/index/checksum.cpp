// Bob Jenkins' lookup3 hashlittle() (public domain algorithm), byte-wise form; HDF5 checksums v2 metadata with it.
#include "io/hdf5/index/decode.hpp"

namespace qgpu::io::h5index {

namespace {
inline std::uint32_t rot(std::uint32_t x, int k) { return (x << k) | (x >> (32 - k)); }
inline void mix(std::uint32_t& a, std::uint32_t& b, std::uint32_t& c) {
  a -= c; a ^= rot(c, 4);  c += b;
  b -= a; b ^= rot(a, 6);  a += c;
  c -= b; c ^= rot(b, 8);  b += a;
  a -= c; a ^= rot(c, 16); c += b;
  b -= a; b ^= rot(a, 19); a += c;
  c -= b; c ^= rot(b, 4);  b += a;
}
inline void final_mix(std::uint32_t& a, std::uint32_t& b, std::uint32_t& c) {
  c ^= b; c -= rot(b, 14);
  a ^= c; a -= rot(c, 11);
  b ^= a; b -= rot(a, 25);
  c ^= b; c -= rot(b, 16);
  a ^= c; a -= rot(c, 4);
  b ^= a; b -= rot(a, 14);
  c ^= b; c -= rot(b, 24);
}
inline std::uint32_t word(const std::uint8_t* k, std::size_t n) {  // up to 4 bytes, little-endian
  if (n == 4) return static_cast<std::uint32_t>(load_le(k, 4));
  std::uint32_t v = 0;
  for (std::size_t i = 0; i < n; ++i) v |= std::uint32_t(k[i]) << (8 * i);
  return v;
}
}  // namespace

std::uint32_t lookup3(const std::uint8_t* k, std::size_t length, std::uint32_t initval) {
  std::uint32_t a, b, c;
  a = b = c = 0xdeadbeefu + static_cast<std::uint32_t>(length) + initval;
  while (length > 12) {
    a += word(k, 4);
    b += word(k + 4, 4);
    c += word(k + 8, 4);
    mix(a, b, c);
    length -= 12;
    k += 12;
  }
  if (length == 0) return c;
  a += word(k, length < 4 ? length : 4);
  if (length > 4) b += word(k + 4, length < 8 ? length - 4 : 4);
  if (length > 8) c += word(k + 8, length - 8);
  final_mix(a, b, c);
  return c;
}

}  // namespace qgpu::io::h5index
