#pragma once
// CPU reference of the encoded-v1 format: tile encoder, stream decoders and the queries answered from the
// encoded form (twins of the CUDA kernels, same integers).
#include <cstddef>
#include <cstdint>
#include <vector>

#include "resident/encoded/format.hpp"
#include "resident/encoded/layout.hpp"

namespace qgpu::encoded::cpu {

// One encoded tile in host memory.
struct HostTile {
  std::vector<std::uint8_t> payload;
  std::vector<std::uint32_t> dir;         // frame_pixels + 1 offsets into payload
  std::vector<std::uint64_t> pixel_sums;  // per pixel, sum over the tile's positions
  std::uint32_t len = 0;
  TileRef ref() const { return {payload.data(), dir.data(), len, 0}; }
};

// Encodes `count` (1..layout.tile) consecutive dense frames in the layout's dtype (count * frame_pixels counts,
// frame-major) as one tile, on `threads` host threads (0 = hardware concurrency). Same bytes for any thread count.
HostTile encode_tile(const Layout& layout, const void* frames, std::uint32_t count, unsigned threads = 0);

// Per-frame totals of `count` dense frames (uint64 each), appended to out.
void frame_totals(const Layout& layout, const void* frames, std::size_t count, std::vector<std::uint64_t>& out);

// Queries on tiles (tiles[t] holds positions [t * layout.tile, ...)). Each raises FormatError on a malformed stream.
// Weighted sum over the listed pixels for every scan position, exact uint64 (weights wrap modulo 2^64 like the
// dense reference).
std::vector<std::uint64_t> masked_sum(const Layout& layout, const std::vector<TileRef>& tiles,
                                      const std::vector<std::uint32_t>& pixels,
                                      const std::vector<std::uint32_t>& weights);
// Several weightings of the same pixels in one decode (CoM: weights det_row and det_col): result[k][frame].
std::vector<std::vector<std::uint64_t>> masked_sums(const Layout& layout, const std::vector<TileRef>& tiles,
                                                    const std::vector<std::uint32_t>& pixels,
                                                    const std::vector<std::vector<std::uint32_t>>& weights);
// Frame `index` (flat scan order) decoded to dense native counts (frame_pixels * dtype bytes).
std::vector<std::uint8_t> decode_frame(const Layout& layout, const std::vector<TileRef>& tiles, std::size_t index);
// Scan positions [pos0, pos0 + rows*cols) of a scan of `scan_cols` columns restricted to the rectangle
// (rows x cols at row0/col0) and detector rectangle (det_rows x det_cols at drow0/dcol0 of a detector `det_width`
// wide): dense native counts [row][col][det_row][det_col].
struct RegionRequest {
  std::size_t scan_cols = 0, row0 = 0, col0 = 0, rows = 0, cols = 0;
  std::size_t det_width = 0, drow0 = 0, dcol0 = 0, det_rows = 0, det_cols = 0;
};
std::vector<std::uint8_t> decode_region(const Layout& layout, const std::vector<TileRef>& tiles,
                                        const RegionRequest& r);
// The listed pixels' counts at every scan position, native dtype, [j][frame] (pixel-major: the SSB gather and
// other per-pixel consumers read whole rows).
std::vector<std::uint8_t> decode_pixels(const Layout& layout, const std::vector<TileRef>& tiles,
                                        const std::vector<std::uint32_t>& pixels);
// Every frame decoded to dense native counts (frames * frame_pixels): the full reference decode.
std::vector<std::uint8_t> decode_all(const Layout& layout, const std::vector<TileRef>& tiles);

}  // namespace qgpu::encoded::cpu
