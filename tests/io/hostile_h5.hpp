#pragma once
// The hostile-file generator of the second campaign (issue 25): byte edits of a valid file that a damaged or
// hostile file shows, each located from the file's own parameters (read through the HDF5 library first), and the
// list of cases built from two base files. Used by the C++ tests (test_hostile_files.cpp), the CLI tests (through
// write_hostile_files) and the fuzz seed corpus (fuzz_make_inspect_seeds). No gtest here.
#include <hdf5.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

#include "corrupt.hpp"
#include "io/hdf5/bitshuffle_plugin.hpp"

namespace qgpu::test::hostile {

inline std::vector<std::uint8_t> slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

inline void spit(const std::string& path, const std::vector<std::uint8_t>& b) {
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(reinterpret_cast<const char*>(b.data()),
                                                                std::streamsize(b.size()));
}

inline std::vector<std::uint8_t> le32s(const std::vector<std::uint64_t>& v) {
  std::vector<std::uint8_t> out;
  for (std::uint64_t x : v)
    for (int k = 0; k < 4; ++k) out.push_back(std::uint8_t(x >> (8 * k)));
  return out;
}

inline void put_le(std::vector<std::uint8_t>& b, std::size_t at, std::uint64_t v, int bytes) {
  for (int k = 0; k < bytes; ++k) b.at(at + k) = std::uint8_t(v >> (8 * k));
}

inline std::uint64_t get_le(const std::vector<std::uint8_t>& b, std::size_t at, int bytes) {
  std::uint64_t v = 0;
  for (int k = bytes; k-- > 0;) v = (v << 8) | b.at(at + k);
  return v;
}

// The only offset of `pattern` in `b`; throws when it is absent or not unique (the edit would be ambiguous).
inline std::size_t find_unique(const std::vector<std::uint8_t>& b, const std::vector<std::uint8_t>& pattern,
                               const char* what) {
  std::size_t found = std::string::npos;
  for (std::size_t i = 0; i + pattern.size() <= b.size(); ++i)
    if (std::memcmp(&b[i], pattern.data(), pattern.size()) == 0) {
      if (found != std::string::npos) throw std::runtime_error(std::string(what) + " is not unique in the file");
      found = i;
    }
  if (found == std::string::npos) throw std::runtime_error(std::string(what) + " not found in the file");
  return found;
}

// What the edits need to know of a dataset, read through the HDF5 library.
struct DatasetFacts {
  std::vector<std::uint64_t> chunk_dims;
  std::uint64_t element_size = 0;
  std::vector<unsigned> bitshuffle_cd;  // cd_values of filter 32008 (empty without it)
  haddr_t header = HADDR_UNDEF;         // object header address
};

inline DatasetFacts facts(const std::string& path, const std::string& dataset) {
  DatasetFacts f;
  H5E_auto2_t func = nullptr;
  void* data = nullptr;
  H5Eget_auto2(H5E_DEFAULT, &func, &data);
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  hid_t ds = file >= 0 ? H5Dopen2(file, dataset.c_str(), H5P_DEFAULT) : -1;
  if (ds >= 0) {
    hid_t dcpl = H5Dget_create_plist(ds);
    hid_t type = H5Dget_type(ds);
    f.element_size = H5Tget_size(type);
    hsize_t cd[32];
    const int rank = H5Pget_chunk(dcpl, 32, cd);
    for (int i = 0; i < rank; ++i) f.chunk_dims.push_back(cd[i]);
    unsigned flags = 0, values[16];
    std::size_t n = 16;
    if (H5Pget_filter_by_id2(dcpl, h5::kBitshuffleFilter, &flags, &n, values, 0, nullptr, nullptr) >= 0)
      f.bitshuffle_cd.assign(values, values + std::min<std::size_t>(n, 16));
    H5O_info_t info;
    if (H5Oget_info2(ds, &info, H5O_INFO_BASIC) >= 0) f.header = info.addr;
    H5Tclose(type);
    H5Pclose(dcpl);
    H5Dclose(ds);
  }
  if (file >= 0) H5Fclose(file);
  H5Eset_auto2(H5E_DEFAULT, func, data);
  if (ds < 0) throw std::runtime_error("cannot open " + dataset + " in " + path);
  return f;
}

// Sets chunk dimension `dim` in the data layout message (versions 1-3 store the chunk dims, then the element size,
// as 4-byte values) to `value`.
inline void set_layout_chunk_dim(const std::string& path, const std::string& dataset, std::size_t dim,
                                 std::uint32_t value) {
  const DatasetFacts f = facts(path, dataset);
  std::vector<std::uint64_t> dims = f.chunk_dims;
  dims.push_back(f.element_size);
  std::vector<std::uint8_t> b = slurp(path);
  const std::size_t at = find_unique(b, le32s(dims), "the layout message's chunk dims");
  put_le(b, at + 4 * dim, value, 4);
  spit(path, b);
}

// Version 1 B-tree leaves of a chunked dataset (node type 1, level 0), file offsets in file order. Every "TREE"
// signature followed by type 1 and level 0 (the files here are small: no chance hit in chunk data is expected, and
// a test checks the count).
inline std::vector<std::size_t> btree_v1_leaves(const std::vector<std::uint8_t>& b) {
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i + 8 <= b.size(); ++i)
    if (std::memcmp(&b[i], "TREE", 4) == 0 && b[i + 4] == 1 && b[i + 5] == 0) out.push_back(i);
  return out;
}

// Byte offset of entry `i`'s key in a version 1 chunk B-tree node at `node` (8-byte addresses): header 24 bytes,
// then per entry a key (size 4, mask 4, rank + 1 offsets of 8) and a child address (8).
inline std::size_t btree_v1_key(std::size_t node, std::size_t rank, std::size_t i) {
  return node + 24 + i * (8 + 8 * (rank + 1) + 8);
}

// Swaps the chunk offsets (not sizes, masks or child addresses) of entries i and j of the first leaf: the chunk at
// child i is then labelled with entry j's position, and HDF5's binary search meets keys out of order.
inline void swap_btree_v1_keys(const std::string& path, const std::string& dataset, std::size_t i, std::size_t j) {
  const std::size_t rank = facts(path, dataset).chunk_dims.size();
  std::vector<std::uint8_t> b = slurp(path);
  const auto leaves = btree_v1_leaves(b);
  if (leaves.empty()) throw std::runtime_error("no version 1 B-tree leaf");
  const std::size_t a = btree_v1_key(leaves.front(), rank, i) + 8, c = btree_v1_key(leaves.front(), rank, j) + 8;
  for (std::size_t k = 0; k < 8 * rank; ++k) std::swap(b.at(a + k), b.at(c + k));
  spit(path, b);
}

// Sets the stored size of entry i of the first leaf.
inline void set_btree_v1_chunk_size(const std::string& path, const std::string& dataset, std::size_t i,
                                    std::uint32_t size) {
  const std::size_t rank = facts(path, dataset).chunk_dims.size();
  std::vector<std::uint8_t> b = slurp(path);
  const auto leaves = btree_v1_leaves(b);
  if (leaves.empty()) throw std::runtime_error("no version 1 B-tree leaf");
  put_le(b, btree_v1_key(leaves.front(), rank, i), size, 4);
  spit(path, b);
}

// Sets cd_values[index] of the bitshuffle filter (32008) in the filter pipeline message.
inline void set_bitshuffle_cd(const std::string& path, const std::string& dataset, std::size_t index,
                              std::uint32_t value) {
  const DatasetFacts f = facts(path, dataset);
  if (f.bitshuffle_cd.size() <= index) throw std::runtime_error("the bitshuffle filter has too few cd_values");
  std::vector<std::uint8_t> b = slurp(path);
  const std::size_t at =
      find_unique(b, le32s(std::vector<std::uint64_t>(f.bitshuffle_cd.begin(), f.bitshuffle_cd.end())),
                  "the bitshuffle cd_values");
  put_le(b, at + 4 * index, value, 4);
  spit(path, b);
}

// Overwrites byte `offset` of the dataset's object header (offset 0: the version of a version 1 header).
inline void set_object_header_byte(const std::string& path, const std::string& dataset, std::size_t offset,
                                   std::uint8_t value) {
  const DatasetFacts f = facts(path, dataset);
  std::vector<std::uint8_t> b = slurp(path);
  b.at(std::size_t(f.header) + offset) = value;
  spit(path, b);
}

// Rewrites the stored bytes of chunk `frame` (rank 3, one frame per chunk): corrupt.hpp's rewrite_chunk.
inline void edit_chunk(const std::string& path, const std::string& dataset, std::uint64_t frame,
                       const std::function<void(std::vector<std::uint8_t>&)>& edit) {
  rewrite_chunk(path, frame, edit, dataset);
}

// Sets the decoded size a bitshuffle chunk's header states (8 bytes, big-endian).
inline void set_chunk_header_total(std::vector<std::uint8_t>& b, std::uint64_t total) {
  for (int k = 0; k < 8; ++k) b.at(k) = std::uint8_t(total >> (8 * (7 - k)));
}

// Flips the bits of byte `offset` of the object header of any object (a group, say).
inline void flip_object_header_byte(const std::string& path, const std::string& object, std::size_t offset) {
  hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  H5O_info_t info;
  const herr_t ok = H5Oget_info_by_name2(file, object.c_str(), &info, H5O_INFO_BASIC, H5P_DEFAULT);
  H5Fclose(file);
  if (ok < 0) throw std::runtime_error("no object " + object + " in " + path);
  std::vector<std::uint8_t> b = slurp(path);
  b.at(std::size_t(info.addr) + offset) ^= 0xFF;
  spit(path, b);
}

// One case: a copy of a base file with one edit, what it exercises and what a reader must say.
struct Case {
  std::string name;
  std::string point;       // the issue's point, e.g. "1"
  bool plain_base = false;  // edit the unfiltered base instead of the bitshuffle one
  std::function<void(const std::string& path, const std::string& dataset)> edit;
  std::vector<std::string> expect;  // substrings of the error a load (and qgpu info's ready line) gives
};

// The cases of issue 25 points 1, 4, 6 and 8 (the read path), on a bitshuffle base (rank 3, one frame per chunk, at
// least 4 frames, written with HDF5's default (earliest) format: version 1 B-tree) and an unfiltered one.
inline std::vector<Case> issue25_cases() {
  std::vector<Case> c;
  c.push_back({"chunk_width_65568", "1", false,
               [](const std::string& p, const std::string& d) { set_layout_chunk_dim(p, d, 2, 65568); },
               {"chunk dimension 2 is 65568 elements", "larger than the dataset's fixed extent"}});
  c.push_back({"chunk_width_64", "1", false,
               [](const std::string& p, const std::string& d) { set_layout_chunk_dim(p, d, 2, 64); },
               {"chunk dimension 2 is 64 elements", "larger than the dataset's fixed extent"}});
  c.push_back({"chunk_rows_64_unfiltered", "1", true,
               [](const std::string& p, const std::string& d) { set_layout_chunk_dim(p, d, 1, 64); },
               {"chunk dimension 1 is 64 elements", "larger than the dataset's fixed extent"}});
  c.push_back({"short_unfiltered_chunk", "4", true,
               [](const std::string& p, const std::string& d) {
                 const DatasetFacts f = facts(p, d);
                 std::uint64_t raw = f.element_size;
                 for (auto x : f.chunk_dims) raw *= x;
                 set_btree_v1_chunk_size(p, d, 2, std::uint32_t(raw - 100));
               },
               {"chunk 2 is stored unfiltered in", "an unfiltered chunk holds"}});
  c.push_back({"btree_keys_swapped", "4", false,
               [](const std::string& p, const std::string& d) { swap_btree_v1_keys(p, d, 1, 2); },
               {"version 1 B-tree keys out of order"}});
  c.push_back({"btree_keys_swapped_unfiltered", "4", true,
               [](const std::string& p, const std::string& d) { swap_btree_v1_keys(p, d, 0, 3); },
               {"version 1 B-tree keys out of order"}});
  c.push_back({"chunk_frames_16711681", "8", false,  // HDF5 itself refuses to open the dataset
               [](const std::string& p, const std::string& d) { set_layout_chunk_dim(p, d, 0, 0x00FF0001); },
               {"the object header of '/entry/data/data'", "is damaged: HDF5 cannot read it"}});
  c.push_back({"chunk_header_states_half_the_frame", "6", false,
               [](const std::string& p, const std::string& d) {
                 const DatasetFacts f = facts(p, d);
                 const std::uint64_t frame = f.chunk_dims[1] * f.chunk_dims[2] * f.element_size;
                 edit_chunk(p, d, 3, [&](auto& b) { set_chunk_header_total(b, frame / 2); });
               },
               {"header states"}});  // (the GPU decoder words the size differently)
  c.push_back({"bitshuffle_element_size_0", "6", false,
               [](const std::string& p, const std::string& d) { set_bitshuffle_cd(p, d, 2, 0); },
               {"bitshuffle element size 0 bytes is not supported"}});
  c.push_back({"bitshuffle_element_size_4", "6", false,
               [](const std::string& p, const std::string& d) { set_bitshuffle_cd(p, d, 2, 4); },
               {"bitshuffle element size 4", "differs from the dtype's 2"}});
  c.push_back({"bitshuffle_block_size_7", "6", false,
               [](const std::string& p, const std::string& d) { set_bitshuffle_cd(p, d, 3, 7); },
               {"bitshuffle block size 7 elements is not a positive multiple of 8"}});
  return c;
}

}  // namespace qgpu::test::hostile
