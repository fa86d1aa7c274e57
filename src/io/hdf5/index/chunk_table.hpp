#pragma once
// Where every chunk of a chunked HDF5 dataset lies in its file, read from the dataset's chunk index in one pass
// (no per-chunk HDF5 calls). Used by the loaders to read raw (still compressed) chunks with plain preads.
#include <hdf5.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/host_bytes.hpp"

namespace qgpu::io {

// Plain data (ChunkLocation{} is all zero): a table of millions is filled by the threads that read it, not first
// zeroed on one (ChunkLocations below).
struct ChunkLocation {
  std::uint64_t offset;       // byte offset of the stored chunk in ChunkTable::file
  std::uint64_t size;         // stored (compressed) bytes; 0 = chunk never written
  std::uint32_t filter_mask;  // bit i set = filter i of the pipeline was skipped for this chunk
};

// A chunk table's locations: resize(n) leaves them unwritten; whoever resizes writes (or zeroes) every one.
using ChunkLocations = std::vector<ChunkLocation, DefaultInitAllocator<ChunkLocation>>;

struct ChunkTable {
  std::string file;                     // the file that holds the chunk bytes (after links are followed)
  std::string dataset_path;             // the dataset inside that file
  std::vector<std::uint64_t> dims;      // dataset dims (elements)
  std::vector<std::uint64_t> chunk_dims;  // chunk dims (elements)
  ChunkLocations chunks;                // row-major over the chunk grid ceil(dims / chunk_dims)
  std::string method;                   // how the index was read: "parsed: <index kind>" or "hdf5 api: <why>"
};

// Reads the whole chunk index of a chunked dataset once. Follows soft/hard links inside the file and external
// links to other files. Falls back to the HDF5 API (and says so in `method`) where the index cannot be parsed.
// Raises IoError (file/dataset missing) or FormatError (not chunked, corrupt index).
ChunkTable read_chunk_table(const std::string& file, const std::string& dataset_path);
// The same for a dataset the caller already holds open (`ds`; file and dataset_path name it in errors and in the
// table): read_layout reads the table with the handle it has, without opening the file again.
ChunkTable read_chunk_table(hid_t ds, const std::string& file, const std::string& dataset_path);

}  // namespace qgpu::io
