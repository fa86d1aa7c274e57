#pragma once
// Parses the chunk index of a dataset from the file bytes alone: object header -> layout and dataspace messages ->
// the index structure. No HDF5 library call; the byte source may be a file or a memory buffer (fuzzing).
#include <cstdint>
#include <string>
#include <vector>

#include "io/hdf5/index/byte_source.hpp"
#include "io/hdf5/index/chunk_table.hpp"
#include "io/hdf5/index/decode.hpp"

namespace qgpu::io::h5index {

// 2^26 chunks (a 1.6 GB table): far beyond any scan, small enough that a corrupt extent cannot exhaust memory.
constexpr std::uint64_t kMaxTableChunks = std::uint64_t(1) << 26;

struct ParseRequest {
  FileSizes sizes;
  std::uint64_t header_addr = 0;                      // object header of the dataset (relative address)
  std::uint64_t max_chunks = kMaxTableChunks;  // larger grids are refused (FormatError)
};

struct ParsedIndex {
  std::vector<std::uint64_t> dims, max_dims, chunk_dims;
  ChunkLocations chunks;              // row-major over the chunk grid of dims
  std::string kind;                   // "version 1 B-tree", "fixed array", ...
};

// FormatError: not chunked or corrupt. Unsupported: a version/form this parser does not read (use the HDF5 API).
ParsedIndex parse_chunk_index(const ByteSource& src, const ParseRequest& req);

}  // namespace qgpu::io::h5index
