// Version 1 B-tree of chunked raw data (node type 1), "Disk Format Level 1A1". Node: "TREE", type, level,
// entries used (2), left and right sibling addresses, then key 0, child 0, key 1, ..., key N. A key is chunk size (4),
// filter mask (4) and one 8-byte element offset per layout dimension (the last, element-size dimension, is 0).
#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "io/hdf5/index/index_readers.hpp"

namespace qgpu::io::h5index {

namespace {

constexpr unsigned kMaxLevel = 64;

struct BtreeV1 {
  IndexContext& ctx;
  std::size_t rank;
  std::size_t key_bytes;
  std::set<std::uint64_t> seen;
  std::vector<std::uint64_t> last;  // scaled offsets of the last chunk found (in order); empty before the first

  // Keys are scaled chunk offsets (rank values each), compared lexicographically as HDF5 does (H5VM_vector_cmp_u).
  bool less(const std::uint64_t* a, const std::uint64_t* b) const {
    return std::lexicographical_compare(a, a + rank, b, b + rank);
  }
  std::string text(const std::uint64_t* k) const {
    std::string s = "(";
    for (std::size_t i = 0; i < rank; ++i) s += (i ? ", " : "") + std::to_string(k[i]);
    return s + ")";
  }

  // HDF5 finds a chunk by binary search over the keys (H5D__btree_cmp3): they must increase through each node and
  // bound its children, so the chunks of the leaves come in increasing order. Keys out of order would make HDF5
  // and this table disagree on which chunk holds which frames (issue 25). lo/hi: the bounds the parent gives.
  void node(std::uint64_t addr, int expect_level, const std::uint64_t* lo, const std::uint64_t* hi) {
    if (!seen.insert(addr).second) corrupt("version 1 B-tree nodes form a cycle");
    if (seen.size() > 2 * ctx.grid.count() + 1024) corrupt("version 1 B-tree has more nodes than the dataset has chunks");
    const FileSizes& s = ctx.sizes;
    const std::uint64_t at = ctx.abs(addr);
    const std::uint64_t head_bytes = 8 + 2 * std::uint64_t(s.addr);
    // One read for header and entries of a node of up to 64 entries (HDF5's default chunk B-tree has 2K = 64).
    const std::uint64_t guess = head_bytes + 64 * (key_bytes + s.addr) + key_bytes;
    std::vector<std::uint8_t> b = ctx.src.read(at, std::min(guess, ctx.src.size() - std::min(ctx.src.size(), at)),
                                               "B-tree node");
    Cursor h(b, "B-tree node");
    h.signature("TREE");
    if (h.u8() != 1) corrupt("B-tree node is not a chunk node (type 1)");
    const unsigned level = h.u8();
    const unsigned entries = h.u16();
    if (level > kMaxLevel || (expect_level >= 0 && int(level) != expect_level))
      corrupt("B-tree node at level " + std::to_string(level) + " where level " + std::to_string(expect_level) +
              " belongs");
    const std::uint64_t node_bytes = head_bytes + std::uint64_t(entries) * (key_bytes + s.addr) + key_bytes;
    if (node_bytes > b.size()) b = ctx.src.read(at, node_bytes, "B-tree node");
    Cursor c(b.data() + head_bytes, static_cast<std::size_t>(node_bytes - head_bytes), "B-tree node");
    std::vector<std::uint64_t> keys(std::size_t(entries) * rank), child(entries), size(entries);
    std::vector<std::uint32_t> mask(entries);
    for (unsigned i = 0; i < entries; ++i) {
      std::uint64_t* key = keys.data() + std::size_t(i) * rank;
      size[i] = c.u32();
      mask[i] = c.u32();
      for (std::size_t d = 0; d <= rank; ++d) {
        const std::uint64_t off = c.u64();
        if (d == rank) {
          if (off != 0) corrupt("B-tree key has a non-zero element-size offset");
          continue;
        }
        const std::uint64_t cd = ctx.layout.chunk_dims[d];
        if (off == 0 || cd == 1) {  // (no division in the common cases)
          key[d] = off;
          continue;
        }
        if (off % cd != 0) corrupt("B-tree key offset is not on a chunk boundary");
        key[d] = off / cd;
      }
      child[i] = c.addr(s);
      if (i > 0 && !less(key - rank, key))
        corrupt("version 1 B-tree keys out of order: key " + std::to_string(i) + " " + text(key) +
                " does not follow key " + std::to_string(i - 1) + " " + text(key - rank) + " (damaged index)");
      if ((lo && less(key, lo)) || (hi && !less(key, hi)))
        corrupt("version 1 B-tree key " + text(key) + " lies outside the range " + (lo ? text(lo) : "(start)") +
                " .. " + (hi ? text(hi) : "(end)") + " its parent node gives it (damaged index)");
    }
    for (unsigned i = 0; i < entries; ++i) {
      const std::uint64_t* key = keys.data() + std::size_t(i) * rank;
      if (level == 0) {
        if (!last.empty() && !less(last.data(), key))
          corrupt("version 1 B-tree chunks out of order: " + text(key) + " after " + text(last.data()) +
                  " (damaged index)");
        last.assign(key, key + rank);
        ctx.grid.put(key, child[i], size[i], mask[i]);
      } else {
        if (child[i] == s.undefined()) corrupt("B-tree child pointer undefined");
        // Child i holds the chunks from key i up to (not including) key i + 1; the last child up to the parent's
        // bound (HDF5 sets the right-most key of a node loosely, so it bounds nothing here).
        node(child[i], int(level) - 1, key, i + 1 < entries ? key + rank : hi);
      }
    }
  }
};

}  // namespace

void read_btree_v1(IndexContext& ctx) {
  if (ctx.layout.index_addr == ctx.sizes.undefined()) return;  // no chunk written yet
  const std::size_t rank = ctx.layout.chunk_dims.size();
  BtreeV1 t{ctx, rank, 8 + 8 * (rank + 1), {}, {}};
  t.node(ctx.layout.index_addr, -1, nullptr, nullptr);
}

}  // namespace qgpu::io::h5index
