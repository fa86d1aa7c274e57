#pragma once
// The LZ4 block format rules (lz4/doc/lz4_Block_format.md) that both bitshuffle decoders enforce, so that the host
// codec (liblz4) and the CUDA decoder (cuda/bitshuffle_lz4_decode.cu) accept exactly the same blocks:
//   1. the block ends with a sequence of literals only (its last token has no match);
//   2. the last 5 decoded bytes are literals: every match ends at least kLastLiterals bytes before the block end;
//   3. every match starts at least kMatchStartMargin bytes before the block end;
//   4. a match offset is not 0 ("The presence of a 0 offset value denotes an invalid (corrupted) block") and does
//      not reach before the start of the block;
//   plus the plain bounds: literals and matches stay inside the input and the decoded size.
// liblz4 1.9.4 (LZ4_decompress_safe) enforces 1-3 and the bounds but accepts offset 0 (it then copies stale output
// bytes): the host codec walks the sequences with lz4_block_violation() before liblz4 decodes. LZ4's encoders never
// write blocks that break these rules (the format requires them of every encoder), so no valid file is refused.
#include <cstddef>
#include <cstdint>

namespace qgpu::io::codec {

inline constexpr std::size_t kLz4MinMatch = 4;
inline constexpr std::size_t kLastLiterals = 5;       // LASTLITERALS of lz4.c
inline constexpr std::size_t kMatchStartMargin = 12;  // MFLIMIT of lz4.c

// Walks the sequences of an LZ4 block of in_len bytes that decodes into out_len bytes (no copying). Returns nullptr
// when it obeys the rules above, else the rule it breaks. That it fills exactly out_len bytes (not fewer) is left to
// the caller, which learns the decoded size from the decoder.
const char* lz4_block_violation(const std::uint8_t* in, std::size_t in_len, std::size_t out_len);

}  // namespace qgpu::io::codec
