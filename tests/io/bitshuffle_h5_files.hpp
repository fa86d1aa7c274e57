#pragma once
// Small HDF5 files of 1-D frames (frames, n) chunked one frame per chunk with the bitshuffle filter (32008),
// written and read through the HDF5 plugin, for codec tests against the reference implementation.
#include <hdf5.h>

#include <cstdint>
#include <string>
#include <vector>

#include "io/hdf5/bitshuffle_plugin.hpp"

namespace qgpu::test {

inline hid_t native_uint(std::size_t es) {
  return es == 1 ? H5T_NATIVE_UINT8 : es == 2 ? H5T_NATIVE_UINT16 : es == 4 ? H5T_NATIVE_UINT32 : H5T_NATIVE_UINT64;
}

// The file datatype of es-byte unsigned elements stored big-endian.
inline hid_t big_endian_uint(std::size_t es) {
  return es == 1 ? H5T_STD_U8BE : es == 2 ? H5T_STD_U16BE : es == 4 ? H5T_STD_U32BE : H5T_STD_U64BE;
}

// Creates path with dataset /d (frames, n) of es-byte unsigned elements (stored big-endian when big_endian), filter
// 32008 with user cd_values cd. Returns the open file and dataset (caller closes).
inline void create_bitshuffle_dataset(const std::string& path, std::size_t es, std::size_t n, std::size_t frames,
                                      const std::vector<unsigned>& cd, hid_t& file, hid_t& ds,
                                      bool big_endian = false) {
  h5::ensure_bitshuffle_filter();
  file = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  hsize_t dims[2] = {frames, n}, chunk[2] = {1, n};
  hid_t space = H5Screate_simple(2, dims, nullptr);
  hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
  H5Pset_chunk(dcpl, 2, chunk);
  H5Pset_filter(dcpl, h5::kBitshuffleFilter, H5Z_FLAG_MANDATORY, cd.size(), cd.data());
  ds = H5Dcreate2(file, "d", big_endian ? big_endian_uint(es) : native_uint(es), space, H5P_DEFAULT, dcpl,
                  H5P_DEFAULT);
  H5Pclose(dcpl);
  H5Sclose(space);
}

// Writes all frames (host order) through the plugin (H5Dwrite; HDF5 converts them to big-endian first when
// big_endian). Returns false on any HDF5 failure.
inline bool write_through_plugin(const std::string& path, std::size_t es, std::size_t n, std::size_t frames,
                                 const std::vector<unsigned>& cd, const void* data, bool big_endian = false) {
  hid_t file, ds;
  create_bitshuffle_dataset(path, es, n, frames, cd, file, ds, big_endian);
  const bool ok = ds >= 0 && H5Dwrite(ds, native_uint(es), H5S_ALL, H5S_ALL, H5P_DEFAULT, data) >= 0;
  H5Dclose(ds);
  H5Fclose(file);
  return ok;
}

// Writes the given chunks raw (H5Dwrite_chunk, filter mask 0: the filter is applied) into a dataset of elements
// stored little- or big-endian. Returns false on failure.
inline bool write_raw_chunks(const std::string& path, std::size_t es, std::size_t n,
                             const std::vector<unsigned>& cd, const std::vector<std::vector<std::uint8_t>>& chunks,
                             bool big_endian = false) {
  hid_t file, ds;
  create_bitshuffle_dataset(path, es, n, chunks.size(), cd, file, ds, big_endian);
  bool ok = ds >= 0;
  for (std::size_t f = 0; ok && f < chunks.size(); ++f) {
    hsize_t off[2] = {f, 0};
    ok = H5Dwrite_chunk(ds, H5P_DEFAULT, 0, off, chunks[f].size(), chunks[f].data()) >= 0;
  }
  H5Dclose(ds);
  H5Fclose(file);
  return ok;
}

// The stored bytes of every chunk (H5Dread_chunk: no filter applied).
inline std::vector<std::vector<std::uint8_t>> read_raw_chunks(const std::string& path, std::size_t frames) {
  std::vector<std::vector<std::uint8_t>> out(frames);
  hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  hid_t ds = H5Dopen2(file, "d", H5P_DEFAULT);
  for (std::size_t f = 0; f < frames; ++f) {
    hsize_t off[2] = {f, 0}, size = 0;
    std::uint32_t mask = 0;
    H5Dget_chunk_storage_size(ds, off, &size);
    out[f].resize(size);
    if (H5Dread_chunk(ds, H5P_DEFAULT, off, &mask, out[f].data()) < 0) out[f].clear();
  }
  H5Dclose(ds);
  H5Fclose(file);
  return out;
}

// All frames decoded by HDF5 through the plugin (H5Dread); empty on failure.
inline std::vector<std::uint8_t> read_through_plugin(const std::string& path, std::size_t es, std::size_t n,
                                                     std::size_t frames) {
  std::vector<std::uint8_t> out(frames * n * es);
  hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  hid_t ds = H5Dopen2(file, "d", H5P_DEFAULT);
  if (ds < 0 || H5Dread(ds, native_uint(es), H5S_ALL, H5S_ALL, H5P_DEFAULT, out.data()) < 0) out.clear();
  H5Dclose(ds);
  H5Fclose(file);
  return out;
}

}  // namespace qgpu::test

#include "io/hdf5/codec/bitshuffle_encode_host.hpp"

namespace qgpu::test {

// An EIGER-style /entry/data/data (frames, rows, cols) uint16 dataset whose chunks are bitshuffle+zstd
// (cd_values[4] = 3), encoded by our host codec and written directly (the Debian plugin cannot compress zstd).
// frame f holds the value (f * 7 + i) % 50 at pixel i. Returns false on any HDF5 failure.
inline bool write_zstd_eiger_file(const std::string& path, std::size_t frames, std::size_t rows, std::size_t cols) {
  h5::ensure_bitshuffle_filter();
  hid_t file = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  hid_t entry = H5Gcreate2(file, "/entry", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  hid_t data = H5Gcreate2(entry, "data", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  hsize_t dims[3] = {frames, rows, cols}, chunk[3] = {1, rows, cols};
  hid_t space = H5Screate_simple(3, dims, nullptr);
  hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
  H5Pset_chunk(dcpl, 3, chunk);
  const unsigned cd[3] = {0, 3, 3};  // default block, zstd, level 3
  H5Pset_filter(dcpl, h5::kBitshuffleFilter, H5Z_FLAG_OPTIONAL, 3, cd);
  hid_t ds = H5Dcreate2(data, "data", H5T_STD_U16LE, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
  bool ok = ds >= 0;
  const io::codec::BitshuffleParams p{2, io::codec::default_block_elems(2), io::codec::BlockCompression::zstd, 3};
  std::vector<std::uint16_t> frame(rows * cols);
  for (std::size_t f = 0; ok && f < frames; ++f) {
    for (std::size_t i = 0; i < frame.size(); ++i) frame[i] = std::uint16_t((f * 7 + i) % 50);
    const auto c = io::codec::encode_chunk(p, frame.size(), frame.data());
    hsize_t off[3] = {f, 0, 0};
    ok = H5Dwrite_chunk(ds, H5P_DEFAULT, 0, off, c.size(), c.data()) >= 0;
  }
  if (ds >= 0) H5Dclose(ds);
  H5Pclose(dcpl);
  H5Sclose(space);
  H5Gclose(data);
  H5Gclose(entry);
  H5Fclose(file);
  return ok;
}

}  // namespace qgpu::test
