#pragma once
// Fills a chunk table through the HDF5 library (one H5Dget_chunk_info call per chunk: slow, quadratic in HDF5 1.10),
// for indexes the parser does not read.
#include <hdf5.h>

#include <string>

#include "io/hdf5/index/chunk_table.hpp"

namespace qgpu::io::h5index {

// t.dims and t.chunk_dims must be set; sets t.chunks and t.method = "hdf5 api: <why>".
void fill_from_hdf5_api(hid_t dataset, ChunkTable& t, std::uint64_t base_addr, const std::string& why);

}  // namespace qgpu::io::h5index
