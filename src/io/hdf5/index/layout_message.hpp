#pragma once
// Decodes the Data Layout message (versions 1-4) and the Dataspace message (versions 1-2) of a dataset.
#include <cstdint>
#include <vector>

#include "io/hdf5/index/decode.hpp"

namespace qgpu::io::h5index {

enum class LayoutClass : std::uint8_t { compact = 0, contiguous = 1, chunked = 2, virtual_ = 3 };
// Chunk index types of layout version 4; btree_v1 stands for every layout version below 4.
enum class IndexType : std::uint8_t { btree_v1 = 0, single = 1, implicit = 2, fixed_array = 3, extensible_array = 4,
                                      btree_v2 = 5 };

struct Layout {
  unsigned version = 0;
  LayoutClass layout_class = LayoutClass::contiguous;
  unsigned flags = 0;                     // v4: bit 0 don't filter partial edge chunks, bit 1 single chunk filtered
  std::vector<std::uint64_t> chunk_dims;  // per dataset dimension (the element-size dimension removed)
  std::uint64_t element_size = 0;         // bytes per element (last layout dimension)
  IndexType index = IndexType::btree_v1;
  std::uint64_t index_addr = 0;           // relative address of the index (or of the single/implicit chunk data)
  std::uint64_t single_size = 0;          // single filtered chunk: stored bytes
  std::uint32_t single_mask = 0;          // single filtered chunk: filter mask
};

struct Dataspace {
  std::vector<std::uint64_t> dims;
  std::vector<std::uint64_t> max_dims;  // ~0 = unlimited
};

Layout decode_layout(const std::vector<std::uint8_t>& msg, const FileSizes& sizes);
Dataspace decode_dataspace(const std::vector<std::uint8_t>& msg, const FileSizes& sizes);

}  // namespace qgpu::io::h5index
