#pragma once
// Damages one stored chunk of a sample file (read raw, edit, write back raw), as a broken acquisition would.
#include <hdf5.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace qgpu::test {

// Rewrites the stored bytes of chunk `frame` (rank 3, one frame per chunk) through HDF5's direct chunk calls.
inline void rewrite_chunk(const std::string& path, std::uint64_t frame,
                          const std::function<void(std::vector<std::uint8_t>&)>& edit,
                          const std::string& dataset = "/entry/data/data") {
  hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  hid_t d = H5Dopen2(f, dataset.c_str(), H5P_DEFAULT);
  hsize_t off[3] = {frame, 0, 0};
  hsize_t size = 0;
  H5Dget_chunk_storage_size(d, off, &size);
  std::vector<std::uint8_t> buf(size);
  std::uint32_t mask = 0;
  H5Dread_chunk(d, H5P_DEFAULT, off, &mask, buf.data());
  edit(buf);
  H5Dwrite_chunk(d, H5P_DEFAULT, mask, off, buf.size(), buf.data());
  H5Dclose(d);
  H5Fclose(f);
}

inline void put_be(std::vector<std::uint8_t>& b, std::size_t at, std::uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) b[at + i] = std::uint8_t(v >> (8 * (bytes - 1 - i)));
}

// The four kinds of damage the loaders must name.
enum class Damage { header_size, truncated, garbage, block_length };

inline void damage(std::vector<std::uint8_t>& b, Damage d) {
  switch (d) {
    case Damage::header_size: put_be(b, 0, 999, 8); break;
    case Damage::truncated: b.resize(b.size() - 20); break;
    case Damage::garbage:
      for (std::size_t i = 20; i < 40 && i < b.size(); ++i) b[i] = 0xff;
      break;
    case Damage::block_length: put_be(b, 12, 100000, 4); break;
  }
}

}  // namespace qgpu::test
