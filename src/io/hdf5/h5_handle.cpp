#include "io/hdf5/h5_handle.hpp"

#include <filesystem>

#include "core/error.hpp"

namespace qgpu::h5 {

QuietErrors::QuietErrors() {
  H5Eget_auto2(H5E_DEFAULT, &func_, &data_);
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
}
QuietErrors::~QuietErrors() { H5Eset_auto2(H5E_DEFAULT, func_, data_); }

Handle open_file(const std::string& path) {
  if (!std::filesystem::exists(path)) throw IoError("file not found: '" + path + "'");
  QuietErrors quiet;
  if (H5Fis_hdf5(path.c_str()) <= 0) throw IoError("not an HDF5 file (or unreadable): '" + path + "'");
  Handle f(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  if (!f.valid()) throw IoError("cannot open HDF5 file '" + path + "'");
  return f;
}

Handle open_dataset(hid_t file, const std::string& dataset_path, const std::string& file_path) {
  QuietErrors quiet;
  if (H5Lexists(file, dataset_path.c_str(), H5P_DEFAULT) <= 0 ||
      H5Oexists_by_name(file, dataset_path.c_str(), H5P_DEFAULT) <= 0)
    throw IoError("dataset '" + dataset_path + "' not found in '" + file_path + "'");
  Handle d(H5Dopen2(file, dataset_path.c_str(), H5P_DEFAULT), H5Dclose);
  if (!d.valid()) throw IoError("'" + dataset_path + "' in '" + file_path + "' is not a dataset");
  return d;
}

}  // namespace qgpu::h5
