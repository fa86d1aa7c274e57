// Writes the HDF5 files the browser tests open (tests/remote/e2e/local.e2e.mjs): bitshuffle+LZ4 (filter 32008,
// the real plugin through the HDF5 filter pipeline) 3D frame stacks in every chunk index layout the HDF5 library
// writes (superblock 0/2/3, object headers 1/2, symbol-table and link-message groups, version 1 B-tree, fixed
// array (paged too), extensible array, version 2 B-tree, single chunk), uint8/16/32, detector sizes with a
// partial bitshuffle block and a verbatim tail. Beside each NAME.h5: NAME.u32, the frames read back through
// the HDF5 library (H5Dread with the plugin) widened to little-endian uint32, the independent reference.
// Also hostile_big_endian_u16.h5 and hostile_precision12_u16.h5 (not in the manifest), which the page refuses.
// Usage: write_webgpu_fixtures OUT_DIR   (prints a JSON manifest of the files on stdout)
#include <hdf5.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "io/hdf5/bitshuffle_plugin.hpp"

namespace {

struct Spec {
  std::string name;
  H5F_libver_t low, high;
  hid_t type;
  unsigned elem;
  hsize_t frames, rows, cols;
  std::vector<hsize_t> max;  // empty = fixed
  std::string method;        // the chunk index the file must have (checked by the browser test)
  hsize_t written = 0;       // frames written (0 = all): a file still being acquired
};

std::uint32_t value(std::uint64_t f, std::uint64_t p, unsigned elem) {
  std::uint64_t x = (f * 2654435761u + p * 40503u + 12345u) ^ (p * f);
  x ^= x >> 13;
  x *= 0x9E3779B97F4A7C15ull;
  x ^= x >> 29;
  if (x % 5 < 3) return static_cast<std::uint32_t>(x % 4);  // mostly small counts, like a detector
  const std::uint64_t max = elem == 1 ? 0xffu : elem == 2 ? 0xffffu : 0xffffffffu;
  return static_cast<std::uint32_t>((x >> 17) & max);
}

bool write(const std::string& dir, const Spec& s) {
  const std::string path = dir + "/" + s.name + ".h5";
  hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
  H5Pset_libver_bounds(fapl, s.low, s.high);
  hid_t f = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
  H5Pclose(fapl);
  if (f < 0) return false;
  const hsize_t dims[3] = {s.frames, s.rows, s.cols}, chunk[3] = {1, s.rows, s.cols};
  hid_t space = H5Screate_simple(3, dims, s.max.empty() ? dims : s.max.data());
  hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
  H5Pset_chunk(dcpl, 3, chunk);
  const unsigned cd[2] = {0, qgpu::h5::kBitshuffleLz4};
  if (H5Pset_filter(dcpl, qgpu::h5::kBitshuffleFilter, H5Z_FLAG_MANDATORY, 2, cd) < 0) return false;
  hid_t lcpl = H5Pcreate(H5P_LINK_CREATE);
  H5Pset_create_intermediate_group(lcpl, 1);
  hid_t ds = H5Dcreate2(f, "/entry/data/data", s.type, space, lcpl, dcpl, H5P_DEFAULT);
  if (ds < 0) return false;
  const std::uint64_t n = s.frames * s.rows * s.cols;
  std::vector<std::uint32_t> v(n);
  for (std::uint64_t i = 0; i < n; ++i) v[i] = value(i / (s.rows * s.cols), i % (s.rows * s.cols), s.elem);
  const hsize_t written = s.written ? s.written : s.frames;
  {
    const hsize_t start[3] = {0, 0, 0}, count[3] = {written, s.rows, s.cols};
    hid_t fspace = H5Dget_space(ds);
    H5Sselect_hyperslab(fspace, H5S_SELECT_SET, start, nullptr, count, nullptr);
    hid_t mspace = H5Screate_simple(3, count, nullptr);
    const herr_t rc = H5Dwrite(ds, H5T_NATIVE_UINT32, mspace, fspace, H5P_DEFAULT, v.data());
    H5Sclose(mspace);
    H5Sclose(fspace);
    if (rc < 0) return false;
  }
  for (std::uint64_t i = written * s.rows * s.cols; i < n; ++i) v[i] = 0;  // unwritten: the fill value
  // Scan shape attribute (frames x 1): these stacks are not square scans.
  const hsize_t two = 2;
  const long long shape[2] = {static_cast<long long>(s.frames), 1};
  hid_t aspace = H5Screate_simple(1, &two, nullptr);
  hid_t attr = H5Acreate2(ds, "scan_shape", H5T_STD_I64LE, aspace, H5P_DEFAULT, H5P_DEFAULT);
  if (attr < 0 || H5Awrite(attr, H5T_NATIVE_LLONG, shape) < 0) return false;
  H5Aclose(attr);
  H5Sclose(aspace);
  H5Dclose(ds);
  H5Pclose(lcpl);
  H5Pclose(dcpl);
  H5Sclose(space);
  H5Fclose(f);
  // Reference: read back through HDF5 and the plugin.
  hid_t rf = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  hid_t rd = H5Dopen2(rf, "/entry/data/data", H5P_DEFAULT);
  std::vector<std::uint32_t> back(n);
  const bool ok = rd >= 0 && H5Dread(rd, H5T_NATIVE_UINT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, back.data()) >= 0 && back == v;
  H5Dclose(rd);
  H5Fclose(rf);
  std::ofstream(dir + "/" + s.name + ".u32", std::ios::binary)
      .write(reinterpret_cast<const char*>(back.data()), static_cast<std::streamsize>(n * 4));
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: write_webgpu_fixtures OUT_DIR\n");
    return 2;
  }
  qgpu::h5::ensure_bitshuffle_filter();
  const hsize_t U = H5S_UNLIMITED;
  const H5F_libver_t E = H5F_LIBVER_EARLIEST, V18 = H5F_LIBVER_V18, V110 = H5F_LIBVER_V110, L = H5F_LIBVER_LATEST;
  const std::vector<Spec> specs = {
      {"btree_v1_sb0_u16", E, V18, H5T_STD_U16LE, 2, 40, 16, 16, {}, "version 1 B-tree"},
      {"btree_v1_sb2_u8_tail", V18, V18, H5T_STD_U8LE, 1, 30, 13, 11, {}, "version 1 B-tree"},
      {"fixed_array_u32", V110, V110, H5T_STD_U32LE, 4, 25, 12, 12, {}, "fixed array"},
      {"fixed_array_paged_sb3_u16", L, L, H5T_STD_U16LE, 2, 1100, 4, 4, {}, "fixed array"},
      {"extensible_array_u16", V110, V110, H5T_STD_U16LE, 2, 1100, 4, 6, {U, 4, 6}, "extensible array"},
      {"btree_v2_u16", V110, V110, H5T_STD_U16LE, 2, 20, 10, 10, {U, U, U}, "version 2 B-tree"},
      {"single_chunk_u16", V110, V110, H5T_STD_U16LE, 2, 1, 64, 64, {}, "single chunk"},
      {"partial_fixed_array_u16", V110, V110, H5T_STD_U16LE, 2, 30, 8, 8, {}, "fixed array", 20},
      // one byte has no byte order: a big-endian uint8 dataset reads as any other
      {"fixed_array_u8_big_endian", V110, V110, H5T_STD_U8BE, 1, 12, 9, 9, {}, "fixed array"},
  };
  // Not in the manifest: files the page must refuse with a clear error (issue 25), uint16 counts stored big-endian
  // and uint16 elements whose count is 12 bits at bit offset 4 (values up to 255: elem 1).
  hid_t bits12 = H5Tcopy(H5T_STD_U16LE);
  H5Tset_precision(bits12, 12);
  H5Tset_offset(bits12, 4);
  const std::vector<Spec> refused = {
      {"hostile_big_endian_u16", V110, V110, H5T_STD_U16BE, 2, 6, 8, 8, {}, "fixed array"},
      {"hostile_precision12_u16", V110, V110, bits12, 1, 6, 8, 8, {}, "fixed array"},
  };
  for (const Spec& s : refused)
    if (!write(argv[1], s)) {
      std::fprintf(stderr, "write_webgpu_fixtures: cannot write %s\n", s.name.c_str());
      return 1;
    }
  H5Tclose(bits12);
  std::printf("[\n");
  for (std::size_t i = 0; i < specs.size(); ++i) {
    const Spec& s = specs[i];
    if (!write(argv[1], s)) {
      std::fprintf(stderr, "write_webgpu_fixtures: cannot write %s\n", s.name.c_str());
      return 1;
    }
    std::printf("  {\"name\": \"%s\", \"dtype\": \"uint%u\", \"dims\": [%llu, %llu, %llu], \"method\": \"%s\", "
                "\"written\": %llu}%s\n",
                s.name.c_str(), 8 * s.elem, static_cast<unsigned long long>(s.frames),
                static_cast<unsigned long long>(s.rows), static_cast<unsigned long long>(s.cols), s.method.c_str(),
                static_cast<unsigned long long>(s.written ? s.written : s.frames), i + 1 < specs.size() ? "," : "");
  }
  std::printf("]\n");
  return 0;
}
