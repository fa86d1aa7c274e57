#include "io/hdf5/index/layout_message.hpp"

namespace qgpu::io::h5index {

namespace {

constexpr unsigned kMaxDims = 32;  // H5S_MAX_RANK (+1 for the element-size dimension)

// The last chunk dimension is the element size; the others must be positive.
void split_dims(Layout& l, const std::vector<std::uint64_t>& all) {
  if (all.size() < 2 || all.size() > kMaxDims + 1) corrupt("layout message has " + std::to_string(all.size()) +
                                                           " chunk dimensions");
  for (std::uint64_t d : all)
    if (d == 0) corrupt("layout message has a zero chunk dimension");
  l.chunk_dims.assign(all.begin(), all.end() - 1);
  l.element_size = all.back();
}

}  // namespace

Layout decode_layout(const std::vector<std::uint8_t>& msg, const FileSizes& sizes) {
  Cursor c(msg, "data layout message");
  Layout l;
  l.version = c.u8();
  if (l.version < 1 || l.version > 4) throw Unsupported("data layout message version " + std::to_string(l.version));
  if (l.version < 3) {
    const unsigned ndims = c.u8();
    const unsigned cls = c.u8();
    if (cls > 2) corrupt("unknown layout class " + std::to_string(cls));
    l.layout_class = static_cast<LayoutClass>(cls);
    c.skip(5);
    if (l.layout_class != LayoutClass::chunked) return l;
    l.index_addr = c.addr(sizes);
    std::vector<std::uint64_t> all(ndims);
    for (auto& d : all) d = c.u32();
    split_dims(l, all);
    return l;
  }
  const unsigned cls = c.u8();
  if (cls > 3) corrupt("unknown layout class " + std::to_string(cls));
  l.layout_class = static_cast<LayoutClass>(cls);
  if (l.layout_class != LayoutClass::chunked) return l;
  if (l.version == 3) {
    const unsigned ndims = c.u8();
    l.index_addr = c.addr(sizes);
    std::vector<std::uint64_t> all(ndims);
    for (auto& d : all) d = c.u32();
    split_dims(l, all);
    return l;
  }
  l.flags = c.u8();
  if (l.flags & ~0x3u) corrupt("layout message has unknown flags");
  const unsigned ndims = c.u8();
  const unsigned enc = c.u8();
  if (enc == 0 || enc > 8) corrupt("layout message encodes chunk dimensions in " + std::to_string(enc) + " bytes");
  std::vector<std::uint64_t> all(ndims);
  for (auto& d : all) d = c.var(enc);
  split_dims(l, all);
  const unsigned type = c.u8();
  if (type < 1 || type > 5) throw Unsupported("chunk index type " + std::to_string(type));
  l.index = static_cast<IndexType>(type);
  switch (l.index) {
    case IndexType::single:
      if (l.flags & 0x2) {
        l.single_size = c.len(sizes);
        l.single_mask = c.u32();
      }
      break;
    case IndexType::implicit: break;
    case IndexType::fixed_array: c.skip(1); break;        // page bits (also in the array header)
    case IndexType::extensible_array: c.skip(5); break;   // creation parameters (also in the array header)
    case IndexType::btree_v2: c.skip(6); break;           // node size, split and merge percent (also in the header)
    default: break;
  }
  l.index_addr = c.addr(sizes);
  return l;
}

Dataspace decode_dataspace(const std::vector<std::uint8_t>& msg, const FileSizes& sizes) {
  Cursor c(msg, "dataspace message");
  const unsigned version = c.u8();
  if (version < 1 || version > 2) throw Unsupported("dataspace message version " + std::to_string(version));
  const unsigned rank = c.u8();
  const unsigned flags = c.u8();
  if (rank > kMaxDims) corrupt("dataspace has rank " + std::to_string(rank));
  if (version == 1) {
    c.skip(5);
  } else {
    const unsigned type = c.u8();
    if (type != 1) throw Unsupported("dataspace of type " + std::to_string(type) + " (not simple)");
  }
  Dataspace s;
  s.dims.resize(rank);
  for (auto& d : s.dims) d = c.len(sizes);
  s.max_dims = s.dims;
  const std::uint64_t all_ones = sizes.len >= 8 ? ~std::uint64_t(0) : (std::uint64_t(1) << (8 * sizes.len)) - 1;
  if (flags & 1)
    for (auto& d : s.max_dims) {
      d = c.len(sizes);
      if (d == all_ones) d = kUnlimited;
    }
  return s;
}

}  // namespace qgpu::io::h5index
