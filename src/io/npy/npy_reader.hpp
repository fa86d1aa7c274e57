#pragma once
// Reader of NumPy .npy files (format 1.0, 2.0, 3.0; numpy.lib.format): a 4D array (scan_r, scan_c, det_r, det_c) or
// a 3D stack of frames (with a scan shape given, or square), unsigned counts in either byte order. C order: the
// data follow the header raw, one record run of whole frames; Fortran order: FileInfo::transposed (every frame
// scattered over the file; io/source/load_transposed.hpp).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "io/source/readers.hpp"

namespace qgpu::io::npy {

struct NpyHeader {
  unsigned major = 1, minor = 0;
  std::string descr;                 // e.g. "<u2"
  bool fortran_order = false;
  std::vector<std::uint64_t> shape;
  std::uint64_t data_offset = 0;     // bytes before the array data
};

// Parses the header from the file's first bytes (all of the header must be in `head`: see header_bytes_needed).
// FormatError naming `where` and the field for anything malformed.
NpyHeader parse_header(const std::uint8_t* head, std::size_t n, const std::string& where);

// How many bytes of the file the header spans (magic + lengths + dict), from its first 12 bytes.
std::uint64_t header_bytes_needed(const std::uint8_t* head, std::size_t n, const std::string& where);

bool is_npy_head(const std::uint8_t* head, std::size_t n);
FileInfo inspect_npy(const std::string& path, const SourceOptions& options);

// The dtype and byte order of a descr such as "<u2", ">u4", "|u1", "=u2", "<i2", "<f4", ">f8". DTypeError for any
// other (the message names it): bool, complex, 64-bit integers, strings, records.
DType dtype_of_descr(const std::string& descr, bool& big_endian, const std::string& where);

}  // namespace qgpu::io::npy
