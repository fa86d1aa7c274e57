#include "io/hdf5/codec/lz4_block_rules.hpp"

namespace qgpu::io::codec {

namespace {

// A length field of 15 continues in bytes of 255 ... until one below 255. False when the input ends first.
bool extend_length(const std::uint8_t* in, std::size_t in_len, std::size_t& ip, std::size_t& length) {
  std::uint8_t x;
  do {
    if (ip >= in_len) return false;
    x = in[ip++];
    length += x;
  } while (x == 255);
  return true;
}

}  // namespace

const char* lz4_block_violation(const std::uint8_t* in, std::size_t in_len, std::size_t out_len) {
  std::size_t ip = 0, op = 0;
  for (;;) {
    if (ip >= in_len) return "LZ4 block ends after a match (the last sequence must be literals only)";
    const unsigned token = in[ip++];
    std::size_t lit = token >> 4;
    if (lit == 15 && !extend_length(in, in_len, ip, lit)) return "LZ4 literal length runs past the block";
    if (lit > in_len - ip) return "LZ4 literals run past the end of the block";
    if (lit > out_len - op) return "LZ4 literals run past the decoded block size";
    ip += lit;
    op += lit;
    if (ip == in_len) return nullptr;  // the last sequence; the decoded size is the caller's check
    if (out_len - op < kMatchStartMargin) return "LZ4 match starts within the last 12 bytes of the block";
    if (in_len - ip < 2) return "LZ4 match offset runs past the end of the block";
    const std::size_t off = in[ip] | (std::size_t(in[ip + 1]) << 8);
    ip += 2;
    if (off == 0) return "LZ4 match offset 0";
    if (off > op) return "LZ4 match offset reaches before the start of the block";
    std::size_t ml = token & 15u;
    if (ml == 15 && !extend_length(in, in_len, ip, ml)) return "LZ4 match length runs past the block";
    ml += kLz4MinMatch;
    if (ml > out_len - op || out_len - op - ml < kLastLiterals)
      return "LZ4 match reaches into the last 5 bytes of the block (which must be literals)";
    op += ml;
  }
}

}  // namespace qgpu::io::codec
