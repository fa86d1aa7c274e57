#pragma once
// Fills a chunk table through the HDF5 library, for indexes the parser does not read: H5Dchunk_iter where HDF5 has
// it (1.10.10+, 1.12.3+), else one H5Dget_chunk_info call per chunk (quadratic in the chunk count).
#include <hdf5.h>

#include <string>

#include "io/hdf5/index/chunk_table.hpp"

namespace qgpu::io::h5index {

// t.dims and t.chunk_dims must be set; sets t.chunks and t.method = "hdf5 api: <why>", then check_table.
void fill_from_hdf5_api(hid_t dataset, ChunkTable& t, std::uint64_t base_addr, const std::string& why);

// The checks our parser makes as it reads, on a table the HDF5 library gave: every written chunk lies inside its
// file, and a chunk of an unfiltered dataset holds exactly the chunk's raw bytes.
// FormatError "chunk index: ..." naming the chunk.
void check_table(hid_t dataset, const ChunkTable& t);

}  // namespace qgpu::io::h5index
