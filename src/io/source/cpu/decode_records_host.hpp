#pragma once
// The host side of the source layer's codecs: one batch of frame records decoded into frames on all cores, whatever
// the reader (bitshuffle chunks of HDF5, plain records of .npy/raw files), big-endian elements swapped after.
#include <cstddef>
#include <optional>

#include "io/hdf5/codec/bitshuffle_decode_host.hpp"
#include "io/hdf5/file_info.hpp"

namespace qgpu::io {

// The decoder's name for provenance ("quantem-gpu host bitshuffle+LZ4, all cores", ...).
std::string host_decoder_name(const FileInfo& fi);

// Decodes the batch (frames of fi's shape and dtype) on `threads` threads (0 = every core). Returns the failure of
// the smallest failing record index, or nothing. FormatError for a codec the host does not decode.
std::optional<codec::ChunkFailure> decode_records_host(const FileInfo& fi, const codec::ChunkBatch& batch,
                                                       unsigned threads);

// Reverses the bytes of each element (elem_size 2 or 4) of n elements in place.
void swap_bytes_host(void* data, std::size_t elem_size, std::size_t n);

}  // namespace qgpu::io
