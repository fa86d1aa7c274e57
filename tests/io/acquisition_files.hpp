#pragma once
// Hand-made master files for the multi-file acquisition tests, written with the HDF5 API directly.
#include <hdf5.h>

#include <filesystem>
#include <string>
#include <vector>

#include "io/hdf5/h5_handle.hpp"

namespace qgpu::test {

inline h5::Handle create_master(const std::string& path) {
  h5::Handle f(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT), H5Fclose);
  EXPECT_TRUE(f.valid()) << path;
  return f;
}

inline h5::Handle create_groups(hid_t file, const char* path) {
  h5::Handle lcpl(H5Pcreate(H5P_LINK_CREATE), H5Pclose);
  H5Pset_create_intermediate_group(lcpl, 1);
  return h5::Handle(H5Gcreate2(file, path, lcpl, H5P_DEFAULT, H5P_DEFAULT), H5Gclose);
}

// Master with /entry/data/<names[i]> external links to targets[i]:/entry/data/data and nothing else.
inline void write_link_master(const std::string& path, const std::vector<std::string>& names,
                              const std::vector<std::string>& targets) {
  h5::Handle f = create_master(path);
  h5::Handle g = create_groups(f, "/entry/data");
  for (std::size_t i = 0; i < names.size(); ++i)
    ASSERT_GE(H5Lcreate_external(targets[i].c_str(), "/entry/data/data", g, names[i].c_str(), H5P_DEFAULT,
                                 H5P_DEFAULT),
              0);
}

inline void write_u32_dataset(hid_t file, const char* path, const std::vector<hsize_t>& dims,
                              const std::vector<std::uint32_t>& values) {
  h5::Handle sp(H5Screate_simple(int(dims.size()), dims.data(), nullptr), H5Sclose);
  h5::Handle lcpl(H5Pcreate(H5P_LINK_CREATE), H5Pclose);
  H5Pset_create_intermediate_group(lcpl, 1);
  h5::Handle ds(H5Dcreate2(file, path, H5T_STD_U32LE, sp, lcpl, H5P_DEFAULT, H5P_DEFAULT), H5Dclose);
  ASSERT_TRUE(ds.valid());
  ASSERT_GE(H5Dwrite(ds, H5T_NATIVE_UINT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()), 0);
}

// Master with a virtual dataset /entry/data/data of (frames, det_r, det_c) u16 mapping each source file's whole
// /entry/data/data to frames [first[i], first[i] + frames[i]); det_cols_taken < det_c maps a part of the detector.
inline void write_vds_master(const std::string& path, const std::vector<std::string>& sources,
                             const std::vector<hsize_t>& first, const std::vector<hsize_t>& frames, hsize_t det_r,
                             hsize_t det_c, hsize_t det_cols_taken = 0) {
  if (det_cols_taken == 0) det_cols_taken = det_c;
  hsize_t total = 0;
  for (hsize_t n : frames) total += n;
  h5::Handle f = create_master(path);
  h5::Handle g = create_groups(f, "/entry/data");
  h5::Handle dcpl(H5Pcreate(H5P_DATASET_CREATE), H5Pclose);
  const hsize_t vdims[3] = {total, det_r, det_c};
  h5::Handle vspace(H5Screate_simple(3, vdims, nullptr), H5Sclose);
  for (std::size_t i = 0; i < sources.size(); ++i) {
    const hsize_t sdims[3] = {frames[i], det_r, det_c};
    h5::Handle sspace(H5Screate_simple(3, sdims, nullptr), H5Sclose);
    const hsize_t start[3] = {first[i], 0, 0}, count[3] = {frames[i], det_r, det_cols_taken};
    H5Sselect_hyperslab(vspace, H5S_SELECT_SET, start, nullptr, count, nullptr);
    if (det_cols_taken != det_c) {
      const hsize_t s0[3] = {0, 0, 0};
      H5Sselect_hyperslab(sspace, H5S_SELECT_SET, s0, nullptr, count, nullptr);
    }
    ASSERT_GE(H5Pset_virtual(dcpl, vspace, sources[i].c_str(), "/entry/data/data", sspace), 0);
  }
  H5Sselect_all(vspace);
  h5::Handle ds(H5Dcreate2(g, "data", H5T_STD_U16LE, vspace, H5P_DEFAULT, dcpl, H5P_DEFAULT), H5Dclose);
  ASSERT_TRUE(ds.valid());
}

inline std::string file_name(const std::string& path) { return std::filesystem::path(path).filename().string(); }

}  // namespace qgpu::test
