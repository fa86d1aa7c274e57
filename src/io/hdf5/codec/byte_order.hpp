#pragma once
// Byte order of stored elements. HDF5 records it in the datatype (H5T_ORDER_LE / H5T_ORDER_BE); the bitshuffle
// filter shuffles the bits of the elements as stored, so after unshuffling a big-endian chunk holds big-endian
// elements: they are swapped to the host's (little-endian) order once decoded, and swapped back before encoding.
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace qgpu::io::codec {

// Reverses the bytes of each of the n elements of elem_size bytes (1, 2, 4 or 8; 1 leaves them) at p.
inline void swap_element_bytes(void* p, std::size_t n, std::size_t elem_size) {
  auto* b = static_cast<std::uint8_t*>(p);
  switch (elem_size) {
    case 2:
      for (std::size_t i = 0; i < n; ++i) {
        std::uint16_t v;
        std::memcpy(&v, b + 2 * i, 2);
        v = __builtin_bswap16(v);
        std::memcpy(b + 2 * i, &v, 2);
      }
      return;
    case 4:
      for (std::size_t i = 0; i < n; ++i) {
        std::uint32_t v;
        std::memcpy(&v, b + 4 * i, 4);
        v = __builtin_bswap32(v);
        std::memcpy(b + 4 * i, &v, 4);
      }
      return;
    case 8:
      for (std::size_t i = 0; i < n; ++i) {
        std::uint64_t v;
        std::memcpy(&v, b + 8 * i, 8);
        v = __builtin_bswap64(v);
        std::memcpy(b + 8 * i, &v, 8);
      }
      return;
    default: return;
  }
}

}  // namespace qgpu::io::codec
