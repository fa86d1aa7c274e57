#pragma once
// Raw (still compressed) one-frame chunks, read without the HDF5 filter pipeline.
// HDF5 1.10's H5Dget_chunk_info_by_coord walks the whole chunk index on every call (quadratic over a scan),
// so chunks are sized with H5Dget_chunk_storage_size and read with H5Dread_chunk, both index lookups.
#include <cstdint>
#include <string>
#include <vector>

#include "io/hdf5/file_info.hpp"
#include "io/hdf5/h5_handle.hpp"

namespace qgpu::io {

class ChunkReader {
 public:
  // FormatError when the dataset is not stored one frame per chunk.
  explicit ChunkReader(const FileInfo& info);

  // Stored (compressed) size of the chunk of a frame (flat scan index); FormatError when it was never written.
  std::uint64_t size(std::uint64_t frame) const;
  // Reads the stored bytes of a frame's chunk into dst (size(frame) bytes). FormatError when the chunk cannot be
  // read or was stored with a filter skipped.
  void read(std::uint64_t frame, void* dst) const;

 private:
  std::vector<hsize_t> coord(std::uint64_t frame) const;
  const FileInfo& info_;
  h5::Handle file_, ds_;
};

}  // namespace qgpu::io
