#pragma once
// Integer index arrays of the sparse formats (CSR indptr / indices): numpy spellings of 32- and 64-bit integers.
#include <cstdint>
#include <cstring>
#include <string>

#include "core/error.hpp"

namespace qgpu::io::sparse {

struct IndexType {
  std::size_t size = 4;
  bool is_signed = true, big = false;
};

inline IndexType index_type(const std::string& s, const std::string& what) {
  IndexType t;
  std::string x = s;
  if (!x.empty() && (x[0] == '<' || x[0] == '>' || x[0] == '=' || x[0] == '|')) {
    t.big = x[0] == '>';
    x = x.substr(1);
  }
  if (x == "i4" || x == "int32") t = {4, true, t.big};
  else if (x == "i8" || x == "int64") t = {8, true, t.big};
  else if (x == "u4" || x == "uint32") t = {4, false, t.big};
  else if (x == "u8" || x == "uint64") t = {8, false, t.big};
  else
    throw FormatError(what + " is '" + s + "'; index arrays are int32, int64, uint32 or uint64 (<i4, <i8, <u4, <u8)");
  return t;
}

// Element i of an index array of type t; negative values come back as -1 (caught by the callers' range checks).
inline std::int64_t index_at(const std::uint8_t* base, std::size_t i, const IndexType& t) {
  std::uint8_t b[8];
  std::memcpy(b, base + i * t.size, t.size);
  if (t.big)
    for (std::size_t k = 0; k < t.size / 2; ++k) std::swap(b[k], b[t.size - 1 - k]);
  if (t.size == 4) {
    std::uint32_t u;
    std::memcpy(&u, b, 4);
    return t.is_signed ? std::int64_t(std::int32_t(u)) : std::int64_t(u);
  }
  std::uint64_t u;
  std::memcpy(&u, b, 8);
  if (!t.is_signed && u > std::uint64_t(INT64_MAX)) return -1;
  return std::int64_t(u) < 0 ? -1 : std::int64_t(u);
}

}  // namespace qgpu::io::sparse
