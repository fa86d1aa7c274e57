#pragma once
// Shape of an encoded-v1 resident: how many scan positions, detector pixels, the dtype and the tile length.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "core/dtype.hpp"
#include "core/error.hpp"
#include "resident/encoded/format.hpp"

namespace qgpu::encoded {

struct Layout {
  std::size_t frames = 0;        // scan positions (flat scan order)
  std::size_t frame_pixels = 0;  // detector pixels per frame
  DType dtype = DType::u16;
  std::uint32_t tile = kDefaultTile;
  Policy policy = Policy::fast;  // the encoder's model choice (format.hpp); decoders read either

  std::size_t tiles() const { return (frames + tile - 1) / tile; }
  std::uint32_t tile_len(std::size_t t) const {
    const std::size_t first = t * tile;
    return static_cast<std::uint32_t>(frames - first < tile ? frames - first : tile);
  }
};

inline const char* policy_name(Policy p) { return p == Policy::compact ? "compact" : "fast"; }
// "compact" | "fast"; anything else: InvalidArgument naming it.
inline Policy parse_policy(const std::string& s) {
  if (s == "compact") return Policy::compact;
  if (s == "fast") return Policy::fast;
  throw InvalidArgument("encoded policy '" + s + "' is not one of compact, fast");
}
// The policy of a new encoded resident: QGPU_ENCODED_POLICY when set and not empty (compact | fast; else
// InvalidArgument), else fast.
inline Policy default_policy() {
  const char* v = std::getenv("QGPU_ENCODED_POLICY");
  return v && *v ? parse_policy(v) : Policy::fast;
}

// Raises InvalidArgument/DTypeError when the layout cannot be encoded: count dtype, 1 <= tile <= kMaxTile, frames
// and pixels nonzero, and a tile's worst-case payload (frame_pixels streams of stream_slot_bytes(tile)) below 4 GiB
// so that its uint32 directory offsets cannot overflow.
inline void validate(const Layout& l) {
  if (!is_count_dtype(l.dtype))
    throw DTypeError("the encoded representation holds uint8, uint16 or uint32 counts, not " + dtype_name(l.dtype) +
                     " values (they stay dense)");
  if (l.tile < 1 || l.tile > kMaxTile)
    throw InvalidArgument("encoded tile length " + std::to_string(l.tile) + " is outside 1.." +
                          std::to_string(kMaxTile));
  if (l.frames == 0 || l.frame_pixels == 0) throw InvalidArgument("encoded resident of an empty dataset");
  if (l.frame_pixels > (std::size_t{1} << 32) / stream_slot_bytes(l.tile))
    throw InvalidArgument("encoded tile of " + std::to_string(l.tile) + " positions x " +
                          std::to_string(l.frame_pixels) + " pixels may exceed 4 GiB: choose a shorter tile");
}

}  // namespace qgpu::encoded
