#pragma once
// A FileInfo as bytes, so that the child process parsing an HDF5 file (io/hdf5/isolated_parse.hpp) sends its result
// to the parent, which uses it without parsing the file again: an 8-byte length, a CBOR object (nlohmann::json) of
// every field the HDF5 reader fills, then the bulk as raw sections in host order (the child is a fork of the parent):
// each chunk table's locations (varints: 3-4 bytes a chunk written in order, in blocks coded and decoded on
// every core), the bad pixels, the sparse positions; the CBOR object holds their
// counts, and the decoder checks that the sections fill the rest exactly.
#include <string>
#include <string_view>

#include "io/hdf5/file_info.hpp"

namespace qgpu::io {

// Raises Error for a FileInfo the format does not carry (a Merlin codec: no HDF5 reader makes one).
std::string encode_file_info(const FileInfo& info);

// Error "malformed FileInfo from the child process parsing '<file>': ..." for bytes that are not a whole, consistent
// encoding (truncated, wrong types, a chunk table whose chunks do not fill its grid, sizes that overflow, bytes
// left over).
FileInfo decode_file_info(std::string_view bytes, const std::string& file);

}  // namespace qgpu::io
