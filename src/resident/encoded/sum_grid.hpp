#pragma once
// Grid of the encoded masked-sum kernel (host-side arithmetic only, tested on the CPU): blocks (tile, chunk of the
// pixel list); each block's warps take groups of `group` listed pixels in turn (32: one stream per lane). The chunk
// count is chosen to balance the work: a block's warps need ceil(groups per block / warps) rounds, the grid needs
// ceil(blocks / resident blocks) waves, and the time is about waves x rounds (plus a small per-block cost: zeroing
// and flushing its sums).
#include <cstddef>
#include <cstdint>

namespace qgpu::encoded {

struct SumGrid {
  std::size_t chunks = 1;     // blocks per tile (grid.y)
  std::size_t per_block = 0;  // listed pixels per block, a multiple of `group` (the last chunk may hold fewer)
};

// tiles >= 1, npix >= 1, warps >= 1 per block; slots = blocks resident on the whole device at once (>= 1);
// group >= 1 pixels per warp and round. At most 65535 chunks (the grid's y limit).
inline SumGrid plan_sum_grid(std::size_t tiles, std::size_t npix, std::size_t warps, std::size_t slots,
                             std::size_t group = 32) {
  if (tiles == 0) tiles = 1;
  if (warps == 0) warps = 1;
  if (slots == 0) slots = 1;
  if (group == 0) group = 32;
  const std::size_t groups = (npix + group - 1) / group;
  if (groups == 0) return {1, group};
  // Candidates: every distinct groups-per-block value reachable with at most 65535 chunks (and at most 4096
  // candidates tried: beyond that, per-block groups of one round dominate anyway).
  std::size_t best_c = 1;
  double best = -1;
  const std::size_t max_c = groups < 65535 ? groups : 65535;
  for (std::size_t c = 1; c <= max_c && c <= 4096; ++c) {
    const std::size_t gpb = (groups + c - 1) / c;
    const std::size_t chunks = (groups + gpb - 1) / gpb;  // the chunks this size actually needs
    if (chunks != c) continue;                             // the same size as a smaller c: already counted
    const std::size_t rounds = (gpb + warps - 1) / warps;
    const std::size_t blocks = tiles * chunks;
    const std::size_t waves = (blocks + slots - 1) / slots;
    // Per-block fixed cost taken as 1/8 of a round (zeroing and flushing the tile's sums).
    const double cost = double(waves) * (double(rounds) + 0.125);
    if (best < 0 || cost < best) {
      best = cost;
      best_c = chunks;
    }
  }
  const std::size_t gpb = (groups + best_c - 1) / best_c;
  SumGrid g;
  g.per_block = gpb * group;
  g.chunks = (npix + g.per_block - 1) / g.per_block;
  return g;
}

}  // namespace qgpu::encoded
