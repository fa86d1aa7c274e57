#pragma once
// Little-endian field decoding for HDF5 metadata: a bound-checked cursor over one structure's bytes, the file's
// sizes of addresses/lengths, and the two ways a parse can stop (corrupt data vs. a form we do not parse).
#include <bit>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/error.hpp"

namespace qgpu::io::h5index {

// A valid structure in a version or form this parser does not know; the caller falls back to the HDF5 API.
struct Unsupported : std::runtime_error {
  using std::runtime_error::runtime_error;
};

[[noreturn]] inline void corrupt(const std::string& msg) { throw FormatError("chunk index: " + msg); }

constexpr std::uint64_t kUnlimited = ~std::uint64_t(0);  // a maximum dimension without limit

// Sizes from the superblock (H5Pget_sizes) and the base address all file addresses are relative to.
struct FileSizes {
  unsigned addr = 8;  // bytes of a file address (2, 4 or 8)
  unsigned len = 8;   // bytes of a length
  std::uint64_t base = 0;
  std::uint64_t undefined() const { return addr >= 8 ? ~std::uint64_t(0) : (std::uint64_t(1) << (8 * addr)) - 1; }
};

inline std::uint64_t load_le(const std::uint8_t* p, unsigned n) {
  if constexpr (std::endian::native == std::endian::little) {  // the common widths in one load
    if (n == 8) {
      std::uint64_t v;
      std::memcpy(&v, p, 8);
      return v;
    }
    if (n == 4) {
      std::uint32_t v;
      std::memcpy(&v, p, 4);
      return v;
    }
  }
  std::uint64_t v = 0;
  for (unsigned i = n; i-- > 0;) v = (v << 8) | p[i];
  return v;
}

// Jenkins lookup3 hashlittle(), as HDF5's H5_checksum_metadata (initval 0).
std::uint32_t lookup3(const std::uint8_t* data, std::size_t n, std::uint32_t initval = 0);

// Whether n bytes match their stored checksum. The fuzz build (QGPU_FUZZ_IGNORE_CHECKSUMS) accepts every checksum
// so that mutated inputs reach the parsing behind them.
inline bool checksum_ok(const std::uint8_t* p, std::size_t n, std::uint32_t stored) {
#ifdef QGPU_FUZZ_IGNORE_CHECKSUMS
  (void)lookup3(p, n);
  (void)stored;
  return true;
#else
  return lookup3(p, n) == stored;
#endif
}

// Verifies the checksum stored in the last 4 bytes of a structure.
inline void check_checksum(const std::vector<std::uint8_t>& b, const char* what) {
  if (b.size() < 4) corrupt(std::string(what) + " too short for its checksum");
  const std::uint32_t stored = static_cast<std::uint32_t>(load_le(b.data() + b.size() - 4, 4));
  if (!checksum_ok(b.data(), b.size() - 4, stored)) corrupt(std::string("checksum mismatch in ") + what);
}

class Cursor {
 public:
  Cursor(const std::uint8_t* p, std::size_t n, const char* what) : p_(p), n_(n), what_(what) {}
  Cursor(const std::vector<std::uint8_t>& b, const char* what) : Cursor(b.data(), b.size(), what) {}

  std::uint64_t var(unsigned bytes) {
    need(bytes);
    const std::uint64_t v = load_le(p_ + pos_, bytes);
    pos_ += bytes;
    return v;
  }
  std::uint8_t u8() { return static_cast<std::uint8_t>(var(1)); }
  std::uint16_t u16() { return static_cast<std::uint16_t>(var(2)); }
  std::uint32_t u32() { return static_cast<std::uint32_t>(var(4)); }
  std::uint64_t u64() { return var(8); }
  std::uint64_t addr(const FileSizes& s) { return var(s.addr); }
  std::uint64_t len(const FileSizes& s) { return var(s.len); }
  void skip(std::size_t bytes) {
    need(bytes);
    pos_ += bytes;
  }
  const std::uint8_t* take(std::size_t bytes) {
    need(bytes);
    const std::uint8_t* p = p_ + pos_;
    pos_ += bytes;
    return p;
  }
  void signature(const char sig[4]) {
    if (std::memcmp(take(4), sig, 4) != 0) corrupt(std::string("bad signature of ") + what_ + " (expected " +
                                                   std::string(sig, 4) + ")");
  }
  std::size_t pos() const { return pos_; }
  std::size_t remaining() const { return n_ - pos_; }

 private:
  void need(std::size_t bytes) const {
    if (bytes > n_ - pos_) corrupt(std::string(what_) + " is truncated");
  }
  const std::uint8_t* p_;
  std::size_t n_;
  std::size_t pos_ = 0;
  const char* what_;
};

// Checked arithmetic for sizes read from a file.
inline std::uint64_t checked_mul(std::uint64_t a, std::uint64_t b, const char* what) {
  std::uint64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) corrupt(std::string(what) + " overflows");
  return r;
}
inline std::uint64_t checked_add(std::uint64_t a, std::uint64_t b, const char* what) {
  std::uint64_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) corrupt(std::string(what) + " overflows");
  return r;
}

}  // namespace qgpu::io::h5index
