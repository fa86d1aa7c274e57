#pragma once
// File locations of one-frame chunks, for reading compressed chunks directly (no HDF5 filter pipeline).
#include <cstdint>
#include <string>
#include <vector>

#include "io/hdf5/file_info.hpp"

namespace qgpu::io {

struct ChunkLocation {
  std::uint64_t file_offset = 0;
  std::uint64_t size = 0;
  unsigned filter_mask = 0;  // nonzero: a filter was skipped when this chunk was written
};

// Locations of the chunks holding the given frames (flat scan indices), in that order. Raises FormatError
// when the dataset is not one frame per chunk or a chunk was never written.
std::vector<ChunkLocation> locate_frame_chunks(const FileInfo& info, const std::vector<std::uint64_t>& frames);

}  // namespace qgpu::io
