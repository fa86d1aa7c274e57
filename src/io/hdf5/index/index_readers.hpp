#pragma once
// One reader per chunk index kind; each walks its structure once and hands every chunk to the grid.
#include <cstdint>

#include "io/hdf5/index/byte_source.hpp"
#include "io/hdf5/index/chunk_grid.hpp"
#include "io/hdf5/index/layout_message.hpp"

namespace qgpu::io::h5index {

struct IndexContext {
  const ByteSource& src;
  const FileSizes& sizes;
  const Layout& layout;
  ChunkGrid& grid;
  std::uint64_t chunk_bytes;  // bytes of an unfiltered chunk
  std::uint64_t abs(std::uint64_t rel) const { return checked_add(sizes.base, rel, "index address"); }
};

void read_btree_v1(IndexContext& ctx);         // layout v1-3: version 1 B-tree, node type 1
void read_btree_v2(IndexContext& ctx);         // layout v4 index 5: version 2 B-tree, record types 10/11
void read_fixed_array(IndexContext& ctx);      // layout v4 index 3
void read_extensible_array(IndexContext& ctx); // layout v4 index 4
void read_single_chunk(IndexContext& ctx);     // layout v4 index 1
void read_implicit(IndexContext& ctx);         // layout v4 index 2

// Bytes of the "chunk size" field of filtered array elements / records, from the stored element size.
unsigned filtered_size_bytes(unsigned element_bytes, unsigned fixed_bytes, const char* what);

}  // namespace qgpu::io::h5index
