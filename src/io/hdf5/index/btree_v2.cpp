// Version 2 B-tree of chunk records ("Disk Format Level 1A2"), record type 10 (address, scaled offsets) or 11
// (address, chunk size, filter mask, scaled offsets). Header "BTHD", internal nodes "BTIN" (records, then child
// pointers: address, record count, and below depth 1 the total record count), leaves "BTLF". All checksummed.
#include <algorithm>
#include <set>

#include "io/hdf5/index/index_readers.hpp"

namespace qgpu::io::h5index {

namespace {

constexpr unsigned kPrefix = 10;    // signature, version, type, checksum
constexpr unsigned kMaxDepth = 32;

unsigned log2_floor(std::uint64_t v) {
  unsigned r = 0;
  while (v >>= 1) ++r;
  return r;
}
unsigned enc_size(std::uint64_t v) { return log2_floor(v) / 8 + 1; }  // bytes to store values up to v

struct BtreeV2 {
  explicit BtreeV2(IndexContext& c) : ctx(c) {}
  IndexContext& ctx;
  unsigned type = 0;
  std::uint64_t node_size = 0, rec_size = 0;
  unsigned size_bytes = 0;  // filtered records: bytes of the chunk size field
  unsigned max_nrec_size = 0;
  std::vector<std::uint64_t> max_nrec, cum_size;
  std::set<std::uint64_t> seen;
  std::vector<std::uint64_t> scaled;  // scaled offsets of the last record put (rank values)
  bool have_last = false;
  std::uint64_t records = 0;
  std::uint64_t total = 0;  // records the header announces

  struct Record {
    std::uint64_t addr = 0, size = 0;
    std::uint32_t mask = 0;
  };

  // Reads record i of a node into recs[i] and its scaled offsets into keys[i * rank ...].
  void record(Cursor& c, Record& r, std::uint64_t* key) {
    r.addr = c.addr(ctx.sizes);
    r.size = ctx.chunk_bytes;
    if (type == 11) {
      r.size = c.var(size_bytes);
      r.mask = c.u32();
    }
    for (std::size_t d = 0; d < scaled.size(); ++d) key[d] = c.u64();
    if (++records > total) corrupt("version 2 B-tree holds more records than its header says");
  }

  // Records come in increasing order of their scaled offsets (H5D__bt2_compare) in an in-order walk: out of order,
  // HDF5's search and this table would disagree on which chunk holds which frames (issue 25).
  void put(const Record& r, const std::uint64_t* key) {
    const std::size_t rank = scaled.size();
    if (have_last && !std::lexicographical_compare(scaled.begin(), scaled.end(), key, key + rank))
      corrupt("version 2 B-tree records out of order (damaged index)");
    scaled.assign(key, key + rank);
    have_last = true;
    ctx.grid.put(key, r.addr, r.size, r.mask);
  }

  std::uint64_t pointer_bytes(unsigned depth) const { return ctx.sizes.addr + max_nrec_size + cum_size[depth - 1]; }

  void node(std::uint64_t addr, std::uint64_t nrec, unsigned depth) {
    if (!seen.insert(addr).second) corrupt("version 2 B-tree nodes form a cycle");
    if (nrec > max_nrec[depth]) corrupt("version 2 B-tree node holds more records than fit");
    const bool leaf = depth == 0;
    std::uint64_t bytes = kPrefix + nrec * rec_size;
    if (!leaf) bytes += (nrec + 1) * pointer_bytes(depth);
    const auto b = ctx.src.read(ctx.abs(addr), bytes, leaf ? "B-tree v2 leaf" : "B-tree v2 internal node");
    Cursor c(b, "B-tree v2 node");
    c.signature(leaf ? "BTLF" : "BTIN");
    if (c.u8() != 0) throw Unsupported("version 2 B-tree node version");
    if (c.u8() != type) corrupt("version 2 B-tree node of another tree type");
    check_checksum(b, "version 2 B-tree node");
    const std::size_t rank = scaled.size();
    std::vector<Record> recs(static_cast<std::size_t>(nrec));
    std::vector<std::uint64_t> keys(recs.size() * rank);
    for (std::size_t i = 0; i < recs.size(); ++i) record(c, recs[i], keys.data() + i * rank);
    if (leaf) {
      for (std::size_t i = 0; i < recs.size(); ++i) put(recs[i], keys.data() + i * rank);
      return;
    }
    std::vector<std::uint64_t> child(recs.size() + 1), child_nrec(recs.size() + 1);
    for (std::size_t i = 0; i <= recs.size(); ++i) {
      child[i] = c.addr(ctx.sizes);
      child_nrec[i] = c.var(max_nrec_size);
      if (depth > 1) c.skip(cum_size[depth - 1]);
      if (child[i] == ctx.sizes.undefined()) corrupt("version 2 B-tree child pointer undefined");
    }
    for (std::size_t i = 0; i <= recs.size(); ++i) {  // in order: child 0, record 0, child 1, ...
      node(child[i], child_nrec[i], depth - 1);
      if (i < recs.size()) put(recs[i], keys.data() + i * rank);
    }
  }
};

}  // namespace

void read_btree_v2(IndexContext& ctx) {
  const FileSizes& s = ctx.sizes;
  if (ctx.layout.index_addr == s.undefined()) return;
  const std::uint64_t hdr_bytes = kPrefix + 4 + 2 + 2 + 1 + 1 + s.addr + 2 + s.len;
  const auto hb = ctx.src.read(ctx.abs(ctx.layout.index_addr), hdr_bytes, "B-tree v2 header");
  Cursor h(hb, "B-tree v2 header");
  h.signature("BTHD");
  if (h.u8() != 0) throw Unsupported("version 2 B-tree header version");
  check_checksum(hb, "version 2 B-tree header");
  BtreeV2 t{ctx};
  t.type = h.u8();
  if (t.type != 10 && t.type != 11) corrupt("version 2 B-tree of type " + std::to_string(t.type) + " indexes chunks");
  t.node_size = h.u32();
  t.rec_size = h.u16();
  const unsigned depth = h.u16();
  h.skip(2);  // split, merge percent
  const std::uint64_t root = h.addr(s);
  const std::uint64_t root_nrec = h.u16();
  const std::uint64_t total = h.len(s);
  t.total = total;
  const std::size_t rank = ctx.layout.chunk_dims.size();
  const std::uint64_t fixed = s.addr + 8 * rank + (t.type == 11 ? 4 : 0);
  if (t.type == 11) {
    if (t.rec_size <= fixed || t.rec_size - fixed > 8) corrupt("version 2 B-tree record size does not fit its type");
    t.size_bytes = static_cast<unsigned>(t.rec_size - fixed);
  } else if (t.rec_size != fixed) {
    corrupt("version 2 B-tree record size does not fit its type");
  }
  if (depth > kMaxDepth) corrupt("version 2 B-tree depth " + std::to_string(depth));
  if (t.node_size <= kPrefix + t.rec_size || t.node_size > (1u << 24)) corrupt("version 2 B-tree node size");
  // Records per node at each depth and the byte widths of the record counts in child pointers (as H5B2hdr.c).
  t.max_nrec.assign(depth + 1, 0);
  t.cum_size.assign(depth + 1, 0);
  std::vector<std::uint64_t> cum_max(depth + 1, 0);
  t.max_nrec[0] = (t.node_size - kPrefix) / t.rec_size;
  cum_max[0] = t.max_nrec[0];
  t.max_nrec_size = enc_size(t.max_nrec[0]);
  for (unsigned d = 1; d <= depth; ++d) {
    const std::uint64_t ptr = t.pointer_bytes(d);
    if (t.node_size < kPrefix + ptr) corrupt("version 2 B-tree node size too small for its depth");
    t.max_nrec[d] = (t.node_size - (kPrefix + ptr)) / (t.rec_size + ptr);
    cum_max[d] = checked_add(checked_mul(t.max_nrec[d] + 1, cum_max[d - 1], "B-tree v2 capacity"), t.max_nrec[d],
                             "B-tree v2 capacity");
    t.cum_size[d] = enc_size(cum_max[d]);
  }
  t.scaled.resize(rank);
  if (root == s.undefined()) {
    if (total != 0) corrupt("version 2 B-tree without a root holds records");
    return;
  }
  t.node(root, root_nrec, depth);
  if (t.records != total)
    corrupt("version 2 B-tree holds " + std::to_string(t.records) + " records, its header says " +
            std::to_string(total));
}

unsigned filtered_size_bytes(unsigned element_bytes, unsigned fixed_bytes, const char* what) {
  if (element_bytes <= fixed_bytes || element_bytes - fixed_bytes > 8)
    corrupt(std::string(what) + " element size " + std::to_string(element_bytes) + " does not fit filtered chunks");
  return element_bytes - fixed_bytes;
}

}  // namespace qgpu::io::h5index
