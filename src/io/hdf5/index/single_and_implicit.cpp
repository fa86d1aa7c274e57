// Layout v4 index types without an index structure: a single chunk (the whole dataset; filtered form carries its
// stored size and filter mask in the layout message) and the implicit index (all chunks allocated contiguously in
// linear order over the grid of the maximum dims; never filtered).
#include "io/hdf5/index/index_readers.hpp"

namespace qgpu::io::h5index {

void read_single_chunk(IndexContext& ctx) {
  const bool filtered = ctx.layout.flags & 0x2;
  const std::vector<std::uint64_t> origin(ctx.grid.rank(), 0);
  if (ctx.grid.count() > 1) corrupt("single-chunk index on a dataset of " + std::to_string(ctx.grid.count()) + " chunks");
  ctx.grid.put(origin.data(), ctx.layout.index_addr, filtered ? ctx.layout.single_size : ctx.chunk_bytes,
               filtered ? ctx.layout.single_mask : 0);
}

void read_implicit(IndexContext& ctx) {
  if (ctx.layout.index_addr == ctx.sizes.undefined()) return;  // storage not allocated yet
  ctx.grid.max_count();  // validates a fixed maximum extent
  const auto& g = ctx.grid.grid();
  const auto& mg = ctx.grid.max_grid();
  std::vector<std::uint64_t> s(g.size(), 0);
  for (std::uint64_t n = 0; n < ctx.grid.count(); ++n) {
    std::uint64_t idx = 0;
    for (std::size_t i = 0; i < g.size(); ++i) idx = idx * mg[i] + s[i];
    const std::uint64_t rel = checked_add(ctx.layout.index_addr, checked_mul(idx, ctx.chunk_bytes, "implicit index"),
                                          "implicit index");
    ctx.grid.put(s.data(), rel, ctx.chunk_bytes, 0);
    for (std::size_t i = g.size(); i-- > 0;) {  // next chunk, row-major
      if (++s[i] < g[i]) break;
      s[i] = 0;
    }
  }
}

}  // namespace qgpu::io::h5index
