#pragma once
// Where an open dataset really lives (after soft/external links): the file holding it, its path there, and what
// the byte-level parser needs (object header address, address/length sizes, base address).
#include <hdf5.h>

#include <string>

#include "io/hdf5/index/parse_chunk_index.hpp"

namespace qgpu::io::h5index {

struct DatasetLocation {
  std::string file;
  std::string dataset_path;
  ParseRequest request;
  bool header_known = true;  // false when HDF5 could not give the object header address
};

DatasetLocation locate_dataset(hid_t dataset);

}  // namespace qgpu::io::h5index
