#include "io/hdf5/index/parse_chunk_index.hpp"

#include "io/hdf5/index/index_readers.hpp"
#include "io/hdf5/index/object_header.hpp"

namespace qgpu::io::h5index {

namespace {

const char* kind_name(IndexType t) {
  switch (t) {
    case IndexType::btree_v1: return "version 1 B-tree";
    case IndexType::single: return "single chunk";
    case IndexType::implicit: return "implicit";
    case IndexType::fixed_array: return "fixed array";
    case IndexType::extensible_array: return "extensible array";
    case IndexType::btree_v2: return "version 2 B-tree";
  }
  return "?";
}

const HeaderMessage& only(const std::vector<HeaderMessage>& msgs, std::uint16_t type, const char* what) {
  const HeaderMessage* found = nullptr;
  for (const auto& m : msgs)
    if (m.type == type) {
      if (found) corrupt(std::string("dataset object header has two ") + what + " messages");
      found = &m;
    }
  if (!found) corrupt(std::string("dataset object header has no ") + what + " message");
  if (found->flags & 0x2) throw Unsupported(std::string("shared ") + what + " message");
  return *found;
}

}  // namespace

ParsedIndex parse_chunk_index(const ByteSource& src, const ParseRequest& req) {
  const FileSizes& sizes = req.sizes;
  if (sizes.addr < 2 || sizes.addr > 8 || sizes.len < 2 || sizes.len > 8)
    throw Unsupported("file addresses of " + std::to_string(sizes.addr) + " bytes, lengths of " +
                      std::to_string(sizes.len));
  const auto msgs = read_object_header(src, sizes, req.header_addr, {kDataspace, kLayout, kFilterPipeline});
  const Layout layout = decode_layout(only(msgs, kLayout, "data layout").data, sizes);
  if (layout.layout_class != LayoutClass::chunked) {
    static const char* names[] = {"compact", "contiguous", "chunked", "virtual"};
    corrupt(std::string("dataset is not chunked (") + names[static_cast<int>(layout.layout_class)] +
            " layout); it has no chunk index");
  }
  const Dataspace space = decode_dataspace(only(msgs, kDataspace, "dataspace").data, sizes);

  ParsedIndex out;
  out.dims = space.dims;
  out.max_dims = space.max_dims;
  out.chunk_dims = layout.chunk_dims;
  out.kind = kind_name(layout.index);
  ChunkGrid grid(space.dims, space.max_dims, layout.chunk_dims, req.max_chunks, src.size(), sizes);
  const std::uint64_t chunk_bytes = raw_chunk_bytes(layout.chunk_dims, layout.element_size);
  // No filter pipeline message: an unfiltered dataset, whose chunks are stored raw.
  bool filtered = false;
  for (const auto& m : msgs) filtered = filtered || m.type == kFilterPipeline;
  if (!filtered) grid.expect_raw_size(chunk_bytes);
  IndexContext ctx{src, sizes, layout, grid, chunk_bytes};
  switch (layout.index) {
    case IndexType::btree_v1: read_btree_v1(ctx); break;
    case IndexType::single: read_single_chunk(ctx); break;
    case IndexType::implicit: read_implicit(ctx); break;
    case IndexType::fixed_array: read_fixed_array(ctx); break;
    case IndexType::extensible_array: read_extensible_array(ctx); break;
    case IndexType::btree_v2: read_btree_v2(ctx); break;
  }
  out.chunks = grid.take();
  return out;
}

}  // namespace qgpu::io::h5index
