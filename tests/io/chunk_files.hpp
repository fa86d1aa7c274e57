#pragma once
// Writes chunked datasets of every HDF5 chunk index kind with the HDF5 library (raw chunks through
// H5Dwrite_chunk: each chunk's bytes start with its index, filtered chunks get varying sizes and filter masks),
// and checks a chunk table against the HDF5 library chunk by chunk.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <hdf5.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "io/hdf5/index/chunk_table.hpp"

namespace qgpu::test {

struct ChunkedSpec {
  std::vector<hsize_t> dims, max_dims, chunk;  // max_dims empty = dims
  H5F_libver_t low = H5F_LIBVER_EARLIEST, high = H5F_LIBVER_LATEST;
  bool deflate = false;      // filter pipeline with deflate; chunks get varying sizes and masks
  bool early_alloc = false;  // H5D_ALLOC_TIME_EARLY (implicit index when unfiltered and fixed)
  hsize_t userblock = 0;
  std::size_t sizeof_addr = 8, sizeof_len = 8;  // file address/length sizes (H5Pset_sizes)
  unsigned istore_k = 0;                        // chunk B-tree half node size (0 = default 32)
  hid_t type = H5T_STD_U16LE;
  std::string name = "/data";
  std::function<bool(std::uint64_t)> written = [](std::uint64_t) { return true; };
};

inline std::uint64_t grid_count(const std::vector<hsize_t>& dims, const std::vector<hsize_t>& chunk) {
  std::uint64_t n = 1;
  for (std::size_t i = 0; i < dims.size(); ++i) n *= (dims[i] + chunk[i] - 1) / chunk[i];
  return n;
}

// Element offsets of chunk i (row-major over the chunk grid).
inline std::vector<hsize_t> chunk_offset(std::uint64_t i, const std::vector<hsize_t>& dims,
                                         const std::vector<hsize_t>& chunk) {
  std::vector<hsize_t> off(dims.size());
  for (std::size_t d = dims.size(); d-- > 0;) {
    const hsize_t g = (dims[d] + chunk[d] - 1) / chunk[d];
    off[d] = (i % g) * chunk[d];
    i /= g;
  }
  return off;
}

inline std::vector<std::uint8_t> chunk_bytes_for(std::uint64_t i, std::size_t n) {
  std::vector<std::uint8_t> b(n);
  for (std::size_t k = 0; k < n; ++k) b[k] = static_cast<std::uint8_t>(k < 8 ? (i >> (8 * k)) : (i * 31 + k));
  return b;
}

inline void write_chunks(hid_t ds, const ChunkedSpec& s) {
  std::size_t raw = H5Tget_size(s.type);
  for (hsize_t c : s.chunk) raw *= c;
  const std::uint64_t n = grid_count(s.dims, s.chunk);
  for (std::uint64_t i = 0; i < n; ++i) {
    if (!s.written(i)) continue;
    const std::size_t size = s.deflate ? 8 + (i * 37) % 300 : raw;
    const std::uint32_t mask = s.deflate && i % 7 == 3 ? 1 : 0;
    const auto bytes = chunk_bytes_for(i, size);
    const auto off = chunk_offset(i, s.dims, s.chunk);
    ASSERT_GE(H5Dwrite_chunk(ds, H5P_DEFAULT, mask, off.data(), size, bytes.data()), 0) << "chunk " << i;
  }
}

inline hid_t create_dataset(hid_t f, const ChunkedSpec& s) {
  const auto& max = s.max_dims.empty() ? s.dims : s.max_dims;
  hid_t space = H5Screate_simple(static_cast<int>(s.dims.size()), s.dims.data(), max.data());
  hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
  H5Pset_chunk(dcpl, static_cast<int>(s.chunk.size()), s.chunk.data());
  if (s.deflate) H5Pset_deflate(dcpl, 4);
  if (s.early_alloc) H5Pset_alloc_time(dcpl, H5D_ALLOC_TIME_EARLY);
  hid_t lcpl = H5Pcreate(H5P_LINK_CREATE);
  H5Pset_create_intermediate_group(lcpl, 1);
  hid_t ds = H5Dcreate2(f, s.name.c_str(), s.type, space, lcpl, dcpl, H5P_DEFAULT);
  H5Pclose(lcpl);
  H5Pclose(dcpl);
  H5Sclose(space);
  return ds;
}

inline hid_t create_file(const std::string& path, const ChunkedSpec& s) {
  hid_t fcpl = H5Pcreate(H5P_FILE_CREATE);
  if (s.userblock) H5Pset_userblock(fcpl, s.userblock);
  if (s.sizeof_addr != 8 || s.sizeof_len != 8) H5Pset_sizes(fcpl, s.sizeof_addr, s.sizeof_len);
  if (s.istore_k) H5Pset_istore_k(fcpl, s.istore_k);
  hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
  H5Pset_libver_bounds(fapl, s.low, s.high);
  hid_t f = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, fcpl, fapl);
  H5Pclose(fapl);
  H5Pclose(fcpl);
  return f;
}

inline void write_chunked(const std::string& path, const ChunkedSpec& s) {
  hid_t f = create_file(path, s);
  ASSERT_GE(f, 0);
  hid_t ds = create_dataset(f, s);
  ASSERT_GE(ds, 0);
  write_chunks(ds, s);
  H5Dclose(ds);
  H5Fclose(f);
}

inline std::vector<std::uint8_t> pread_bytes(const std::string& file, std::uint64_t offset, std::uint64_t n) {
  std::vector<std::uint8_t> b(n);
  const int fd = ::open(file.c_str(), O_RDONLY);
  EXPECT_GE(fd, 0) << file;
  if (fd < 0) return {};
  const ssize_t got = ::pread(fd, b.data(), n, static_cast<off_t>(offset));
  ::close(fd);
  EXPECT_EQ(got, static_cast<ssize_t>(n));
  return b;
}

// Every chunk of the table against the HDF5 library: stored size (H5Dget_chunk_storage_size), filter mask and
// stored bytes (H5Dread_chunk vs. pread at the table's offset); with exact_addresses also the address from
// H5Dget_chunk_info_by_coord (quadratic in HDF5 1.10: small datasets only) plus the file's base address.
inline void expect_matches_hdf5(const std::string& path, const std::string& dset, const io::ChunkTable& t,
                                bool exact_addresses, hsize_t base = 0) {
  hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  hid_t ds = H5Dopen2(f, dset.c_str(), H5P_DEFAULT);
  ASSERT_GE(ds, 0);
  const std::vector<hsize_t> dims(t.dims.begin(), t.dims.end()), chunk(t.chunk_dims.begin(), t.chunk_dims.end());
  const std::uint64_t n = grid_count(dims, chunk);
  ASSERT_EQ(t.chunks.size(), n);
  H5E_auto2_t func = nullptr;
  void* data = nullptr;
  H5Eget_auto2(H5E_DEFAULT, &func, &data);
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  std::uint64_t stored = 0;
  for (std::uint64_t i = 0; i < n; ++i) {
    const auto off = chunk_offset(i, dims, chunk);
    hsize_t size = 0;
    if (H5Dget_chunk_storage_size(ds, off.data(), &size) < 0) size = 0;
    const io::ChunkLocation& c = t.chunks[i];
    ASSERT_EQ(c.size, size) << "chunk " << i;
    if (size == 0) continue;
    ++stored;
    std::vector<std::uint8_t> ref(size);
    std::uint32_t mask = 0;
    ASSERT_GE(H5Dread_chunk(ds, H5P_DEFAULT, off.data(), &mask, ref.data()), 0);
    ASSERT_EQ(c.filter_mask, mask) << "chunk " << i;
    ASSERT_EQ(pread_bytes(t.file, c.offset, c.size), ref) << "chunk " << i;
    if (exact_addresses) {
      unsigned m = 0;
      haddr_t addr = 0;
      hsize_t sz = 0;
      ASSERT_GE(H5Dget_chunk_info_by_coord(ds, off.data(), &m, &addr, &sz), 0);
      ASSERT_EQ(c.offset, addr + base) << "chunk " << i;
    }
  }
  hsize_t num = 0;
  hid_t space = H5Dget_space(ds);
  EXPECT_GE(H5Dget_num_chunks(ds, space, &num), 0);
  H5Sclose(space);
  EXPECT_EQ(stored, num);
  H5Eset_auto2(H5E_DEFAULT, func, data);
  H5Dclose(ds);
  H5Fclose(f);
}

// Every chunk HDF5 lists (H5Dget_chunk_info by index: offset, filter mask, address, size) at the same place of the
// table (address + the file's base address), and no other chunk in the table. Quadratic in HDF5 1.10: a few
// thousand chunks at most.
inline void expect_matches_chunk_info(const std::string& path, const std::string& dset, const io::ChunkTable& t,
                                      hsize_t base = 0) {
  hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  hid_t ds = H5Dopen2(f, dset.c_str(), H5P_DEFAULT);
  ASSERT_GE(ds, 0);
  hid_t space = H5Dget_space(ds);
  hsize_t num = 0;
  ASSERT_GE(H5Dget_num_chunks(ds, space, &num), 0);
  const std::size_t rank = t.dims.size();
  std::uint64_t in_table = 0;
  for (const io::ChunkLocation& c : t.chunks) in_table += c.size > 0;
  EXPECT_EQ(in_table, num);
  for (hsize_t k = 0; k < num; ++k) {
    std::vector<hsize_t> off(rank);
    unsigned mask = 0;
    haddr_t addr = 0;
    hsize_t size = 0;
    ASSERT_GE(H5Dget_chunk_info(ds, space, k, off.data(), &mask, &addr, &size), 0) << "chunk " << k;
    std::uint64_t idx = 0;
    for (std::size_t d = 0; d < rank; ++d) {
      const std::uint64_t g = (t.dims[d] + t.chunk_dims[d] - 1) / t.chunk_dims[d];
      ASSERT_EQ(off[d] % t.chunk_dims[d], 0u);
      idx = idx * g + off[d] / t.chunk_dims[d];
    }
    ASSERT_LT(idx, t.chunks.size());
    const io::ChunkLocation& c = t.chunks[idx];
    ASSERT_EQ(c.offset, addr + base) << "chunk " << k << " (table entry " << idx << ")";
    ASSERT_EQ(c.size, size) << "chunk " << k;
    ASSERT_EQ(c.filter_mask, mask) << "chunk " << k;
  }
  H5Sclose(space);
  H5Dclose(ds);
  H5Fclose(f);
}

// The highest level of the version 1 chunk B-tree nodes ("TREE", type 1) found in a file; -1 when none.
inline int btree_v1_height(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) return -1;
  std::vector<std::uint8_t> b(static_cast<std::size_t>(::lseek(fd, 0, SEEK_END)));
  const ssize_t got = ::pread(fd, b.data(), b.size(), 0);
  ::close(fd);
  int top = -1;
  for (std::size_t i = 0; got > 0 && i + 8 <= b.size(); ++i)
    if (std::memcmp(&b[i], "TREE", 4) == 0 && b[i + 4] == 1) top = std::max<int>(top, b[i + 5]);
  return top;
}

}  // namespace qgpu::test
