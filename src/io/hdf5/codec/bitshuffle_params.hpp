#pragma once
// Parameters of a bitshuffle (filter 32008) dataset, read from or written to the filter's cd_values.
#include <cstddef>
#include <string>
#include <vector>

#include "io/hdf5/codec/bitshuffle_format.hpp"

namespace qgpu::io::codec {

struct BitshuffleParams {
  std::size_t elem_size = 2;    // bytes per element: 1, 2, 4 or 8
  std::size_t block_elems = 0;  // resolved block size in elements (never 0: the default is filled in)
  BlockCompression compression = BlockCompression::lz4;
  int zstd_level = 0;           // cd_values[5] for zstd; 0 = libzstd's default level
  // The elements are stored big-endian (the dataset's HDF5 datatype, not a cd_value): the decoder swaps each
  // decoded element to the host's order, the encoder swaps each element before shuffling (codec/byte_order.hpp).
  bool big_endian = false;

  std::size_t block_bytes() const { return block_elems * elem_size; }
};

// Resolves the stored cd_values ([0],[1] versions, [2] element size, [3] block elements (0 = default),
// [4] compression, [5] zstd level). Raises FormatError naming the value that this codec cannot decode.
BitshuffleParams params_from_cd_values(const std::vector<unsigned>& cd);

// Checks a parameter set (element size, block size a positive multiple of 8 within LZ4's input limit,
// compression lz4/zstd). Raises FormatError with the reason.
void validate(const BitshuffleParams& p);

// The user cd_values to give H5Pset_filter for these parameters ({block, compression[, level]}); the plugin's
// set_local prepends versions and the element size. block_elems equal to the default is written as given.
std::vector<unsigned> filter_cd_values(const BitshuffleParams& p);

// "bitshuffle+lz4" or "bitshuffle+zstd (cd_values[4]=3)" for messages.
std::string describe(BlockCompression c);

}  // namespace qgpu::io::codec
