// Writes a seed corpus for fuzz_inspect: small files of the layouts inspect reads (EIGER-style 3D bitshuffle
// chunks with detector metadata and a pixel mask, DECTRIS NeXus instrument values with units, 4D, scan_shape
// attribute, calibration, newer-format indexes) and a few broken ones (truncated, a damaged object header, a signed
// dtype, rank 5), big-endian counts and a 12-bit count at bit offset 4.
// Usage: fuzz_make_inspect_seeds OUT_DIR
#include <hdf5.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <vector>

#include "../io/hostile_h5.hpp"
#include "io/hdf5/bitshuffle_plugin.hpp"
#include "io/hdf5/codec/bitshuffle_encode_host.hpp"

namespace {

constexpr int kBitshuffle = qgpu::h5::kBitshuffleFilter;

hid_t create_with_parents(hid_t file, const char* path, hid_t type, const std::vector<hsize_t>& dims,
                          const std::vector<hsize_t>& chunk, bool bitshuffle, const std::vector<hsize_t>& max = {}) {
  hid_t space = H5Screate_simple(int(dims.size()), dims.data(), max.empty() ? nullptr : max.data());
  hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
  if (!chunk.empty()) H5Pset_chunk(dcpl, int(chunk.size()), chunk.data());
  if (bitshuffle) {
    const unsigned cd[2] = {0, 2};  // default block, LZ4
    H5Pset_filter(dcpl, kBitshuffle, H5Z_FLAG_OPTIONAL, 2, cd);
  }
  hid_t lcpl = H5Pcreate(H5P_LINK_CREATE);
  H5Pset_create_intermediate_group(lcpl, 1);
  hid_t ds = H5Dcreate2(file, path, type, space, lcpl, dcpl, H5P_DEFAULT);
  H5Pclose(lcpl);
  H5Pclose(dcpl);
  H5Sclose(space);
  return ds;
}

// Frames (frames, 8, 8) of uint16 counts, each chunk one frame encoded by our bitshuffle+LZ4 encoder (elements
// stored big-endian when big_endian: the dataset's type is then U16BE).
void write_bitshuffle_frames(hid_t ds, std::size_t frames, bool big_endian = false) {
  const qgpu::io::codec::BitshuffleParams p{2, qgpu::io::codec::default_block_elems(2),
                                            qgpu::io::codec::BlockCompression::lz4, 0, big_endian};
  std::vector<std::uint16_t> frame(64);
  for (std::size_t f = 0; f < frames; ++f) {
    for (std::size_t i = 0; i < frame.size(); ++i) frame[i] = std::uint16_t((f * 5 + i * i) % 7);
    const auto c = qgpu::io::codec::encode_chunk(p, frame.size(), frame.data());
    hsize_t off[3] = {f, 0, 0};
    H5Dwrite_chunk(ds, H5P_DEFAULT, 0, off, c.size(), c.data());
  }
}

void write_scalar(hid_t file, const char* path, long long v) {
  hid_t ds = create_with_parents(file, path, H5T_STD_I64LE, {}, {}, false);
  H5Dwrite(ds, H5T_NATIVE_LLONG, H5S_ALL, H5S_ALL, H5P_DEFAULT, &v);
  H5Dclose(ds);
}

// A NeXus field: a float64 scalar with a units attribute (as DECTRIS writes them).
void write_nexus(hid_t file, const char* path, double v, const char* units) {
  hid_t ds = create_with_parents(file, path, H5T_IEEE_F64LE, {}, {}, false);
  H5Dwrite(ds, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, &v);
  hid_t t = H5Tcopy(H5T_C_S1);
  H5Tset_size(t, std::strlen(units) + 1);
  hid_t s = H5Screate(H5S_SCALAR);
  hid_t a = H5Acreate2(ds, "units", t, s, H5P_DEFAULT, H5P_DEFAULT);
  H5Awrite(a, t, units);
  H5Aclose(a);
  H5Sclose(s);
  H5Tclose(t);
  H5Dclose(ds);
}

void fill(hid_t ds, hid_t mem_type, std::size_t bytes) {
  std::vector<std::uint8_t> v(bytes);
  for (std::size_t i = 0; i < bytes; ++i) v[i] = std::uint8_t(i * 13 % 5);
  H5Dwrite(ds, mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data());
}

hid_t create_file(const std::string& path, bool latest) {
  hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
  if (latest) H5Pset_libver_bounds(fapl, H5F_LIBVER_V110, H5F_LIBVER_LATEST);
  hid_t f = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
  H5Pclose(fapl);
  return f;
}

std::vector<char> slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

void spit(const std::string& path, const std::vector<char>& b) {
  std::ofstream(path, std::ios::binary).write(b.data(), std::streamsize(b.size()));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: fuzz_make_inspect_seeds OUT_DIR\n");
    return 2;
  }
  const std::string dir = argv[1];
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  const std::vector<std::pair<std::string, std::function<void(hid_t)>>> files = {
      {"eiger_bitshuffle",
       [](hid_t f) {
         hid_t ds = create_with_parents(f, "/entry/data/data", H5T_STD_U16LE, {4, 8, 8}, {1, 8, 8}, true);
         write_bitshuffle_frames(ds, 4);
         H5Dclose(ds);
         write_scalar(f, "/entry/instrument/detector/detectorSpecific/ntrigger", 2);
         write_scalar(f, "/entry/instrument/detector/detectorSpecific/nimages", 2);
         hid_t m = create_with_parents(f, "/entry/instrument/detector/detectorSpecific/pixel_mask", H5T_STD_U32LE,
                                       {8, 8}, {}, false);
         fill(m, H5T_NATIVE_UINT32, 64 * 4);
         H5Dclose(m);
       }},
      {"dectris_nexus",
       [](hid_t f) {
         hid_t ds = create_with_parents(f, "/entry/data/data", H5T_STD_U16LE, {6, 8, 8}, {1, 8, 8}, true);
         write_bitshuffle_frames(ds, 6);
         H5Dclose(ds);
         write_scalar(f, "/entry/instrument/detector/detectorSpecific/ntrigger", 6);
         write_scalar(f, "/entry/instrument/detector/detectorSpecific/nimages", 1);
         write_nexus(f, "/entry/instrument/beam/incident_wavelength", 0.0196875, "angstrom");
         write_nexus(f, "/entry/instrument/detector/detectorSpecific/photon_energy", 300000, "eV");
         write_nexus(f, "/entry/instrument/detector/x_pixel_size", 75e-6, "m");
         write_nexus(f, "/entry/instrument/detector/y_pixel_size", 75, "um");
         write_nexus(f, "/entry/instrument/detector/detector_distance", 150, "mm");
         write_nexus(f, "/entry/instrument/detector/beam_center_x", 4.5, "pixel");
         write_nexus(f, "/entry/instrument/detector/beam_center_y", 3.5, "pixel");
         write_nexus(f, "/entry/instrument/detector/count_time", 1, "ms");
         write_nexus(f, "/entry/instrument/detector/frame_time", 0.001, "s");
       }},
      {"scan4d_u8",
       [](hid_t f) {
         hid_t ds = create_with_parents(f, "/data", H5T_STD_U8LE, {2, 3, 4, 4}, {1, 1, 4, 4}, false);
         fill(ds, H5T_NATIVE_UINT8, 2 * 3 * 16);
         H5Dclose(ds);
       }},
      {"scan_shape_attribute_calibration",
       [](hid_t f) {
         hid_t ds = create_with_parents(f, "/entry/data/data", H5T_STD_U32LE, {6, 4, 4}, {1, 4, 4}, false);
         fill(ds, H5T_NATIVE_UINT32, 6 * 16 * 4);
         const hsize_t two = 2;
         hid_t sp = H5Screate_simple(1, &two, nullptr);
         hid_t a = H5Acreate2(ds, "scan_shape", H5T_STD_I64LE, sp, H5P_DEFAULT, H5P_DEFAULT);
         const long long v[2] = {2, 3};
         H5Awrite(a, H5T_NATIVE_LLONG, v);
         H5Aclose(a);
         H5Sclose(sp);
         H5Dclose(ds);
         hid_t lcpl = H5Pcreate(H5P_LINK_CREATE);
         H5Pset_create_intermediate_group(lcpl, 1);
         hid_t g = H5Gcreate2(f, "/entry/calibration", lcpl, H5P_DEFAULT, H5P_DEFAULT);
         hid_t s = H5Screate(H5S_SCALAR);
         hid_t c = H5Acreate2(g, "R_pixel_size", H5T_IEEE_F64LE, s, H5P_DEFAULT, H5P_DEFAULT);
         const double px = 0.5;
         H5Awrite(c, H5T_NATIVE_DOUBLE, &px);
         H5Aclose(c);
         H5Sclose(s);
         H5Gclose(g);
         H5Pclose(lcpl);
       }},
      {"signed_dtype",
       [](hid_t f) {
         hid_t ds = create_with_parents(f, "/entry/data/data", H5T_STD_I16LE, {4, 4, 4}, {1, 4, 4}, false);
         H5Dclose(ds);
       }},
      {"big_endian_bitshuffle",  // issue 25: counts stored big-endian
       [](hid_t f) {
         hid_t ds = create_with_parents(f, "/entry/data/data", H5T_STD_U16BE, {4, 8, 8}, {1, 8, 8}, true);
         write_bitshuffle_frames(ds, 4, true);
         H5Dclose(ds);
       }},
      {"precision12_offset4",  // issue 25: a count of 12 bits at bit 4 of a 16-bit element
       [](hid_t f) {
         hid_t t = H5Tcopy(H5T_STD_U16LE);
         H5Tset_precision(t, 12);
         H5Tset_offset(t, 4);
         hid_t ds = create_with_parents(f, "/entry/data/data", t, {4, 4, 4}, {1, 4, 4}, false);
         fill(ds, H5T_NATIVE_UINT8, 4 * 16);
         H5Dclose(ds);
         H5Tclose(t);
       }},
      {"rank5",
       [](hid_t f) {
         hid_t ds = create_with_parents(f, "/data", H5T_STD_U16LE, {1, 2, 2, 4, 4}, {1, 1, 1, 4, 4}, false);
         H5Dclose(ds);
       }},
  };
  int written = 0;
  for (bool latest : {false, true})
    for (const auto& [name, build] : files) {
      const std::string path = dir + "/" + name + (latest ? "_v110" : "") + ".h5";
      hid_t f = create_file(path, latest);
      if (f < 0) return 1;
      build(f);
      H5Fclose(f);
      ++written;
    }
  // The unlimited-frames layout of a growing acquisition (extensible array / B-tree v2 with the v110 format).
  {
    const std::string path = dir + "/eiger_unlimited_v110.h5";
    hid_t f = create_file(path, true);
    hid_t ds = create_with_parents(f, "/entry/data/data", H5T_STD_U16LE, {4, 8, 8}, {1, 8, 8}, true,
                                   {H5S_UNLIMITED, 8, 8});
    write_bitshuffle_frames(ds, 3);  // one chunk not yet written
    H5Dclose(ds);
    H5Fclose(f);
    ++written;
  }
  // Broken copies of the first file: cut to half, and a run of bytes overwritten past the superblock.
  const std::vector<char> good = slurp(dir + "/eiger_bitshuffle.h5");
  spit(dir + "/broken_truncated.h5", std::vector<char>(good.begin(), good.begin() + std::ptrdiff_t(good.size() / 2)));
  std::vector<char> damaged = good;
  for (std::size_t i = 96; i < 112 && i < damaged.size(); ++i) damaged[i] = char(0xff);
  spit(dir + "/broken_header_bytes.h5", damaged);
  written += 2;
  // The read-path cases of issue 25 (tests/io/hostile_h5.hpp) on two bases: bitshuffle (default block, LZ4; HDF5
  // loads the plugin from its default folder when installed, whose set_local prepends versions and the element
  // size) and unfiltered.
  for (bool plain : {false, true}) {
    const std::string path = dir + (plain ? "/issue25_plain_base.h5" : "/issue25_bitshuffle_base.h5");
    hid_t f = create_file(path, false);
    hid_t space = H5Screate_simple(3, std::vector<hsize_t>{16, 8, 8}.data(), nullptr);  // a 4 x 4 scan
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_chunk(dcpl, 3, std::vector<hsize_t>{1, 8, 8}.data());
    const unsigned cd[2] = {0, 2};
    if (!plain) H5Pset_filter(dcpl, kBitshuffle, H5Z_FLAG_OPTIONAL, 2, cd);
    hid_t lcpl = H5Pcreate(H5P_LINK_CREATE);
    H5Pset_create_intermediate_group(lcpl, 1);
    hid_t ds = H5Dcreate2(f, "/entry/data/data", H5T_STD_U16LE, space, lcpl, dcpl, H5P_DEFAULT);
    if (plain) fill(ds, H5T_NATIVE_UINT16, 16 * 64 * 2);
    else write_bitshuffle_frames(ds, 16);
    H5Dclose(ds);
    H5Pclose(lcpl);
    H5Pclose(dcpl);
    H5Sclose(space);
    H5Fclose(f);
    ++written;
  }
  for (const auto& c : qgpu::test::hostile::issue25_cases()) {
    const std::string path = dir + "/issue25_" + c.name + ".h5";
    spit(path, slurp(dir + (c.plain_base ? "/issue25_plain_base.h5" : "/issue25_bitshuffle_base.h5")));
    try {
      c.edit(path, "/entry/data/data");
      ++written;
    } catch (const std::exception& e) {  // e.g. no plugin here: the cd_values were not expanded
      std::fprintf(stderr, "fuzz_make_inspect_seeds: %s skipped: %s\n", c.name.c_str(), e.what());
      std::remove(path.c_str());
    }
  }
  std::printf("%d seeds in %s\n", written, dir.c_str());
  return 0;
}
