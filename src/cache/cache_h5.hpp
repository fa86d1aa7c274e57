#pragma once
// Small HDF5 helpers for the product cache: 2D datasets and scalar/string attributes, with typed errors.
#include <hdf5.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/image.hpp"
#include "io/hdf5/h5_handle.hpp"

namespace qgpu::cache::h5io {

h5::Handle create_file(const std::string& path);
h5::Handle open_group(hid_t parent, const std::string& name, bool create);

void write_string(hid_t obj, const std::string& name, const std::string& value);
void write_int(hid_t obj, const std::string& name, std::int32_t value);
void write_double(hid_t obj, const std::string& name, double value);
void write_u64s(hid_t obj, const std::string& name, const std::vector<std::uint64_t>& values);

bool has_attribute(hid_t obj, const std::string& name);
std::vector<std::string> attribute_names(hid_t obj);
std::string read_string(hid_t obj, const std::string& name, const std::string& where);
std::int64_t read_int(hid_t obj, const std::string& name, const std::string& where);
double read_double(hid_t obj, const std::string& name, const std::string& where);
std::vector<std::uint64_t> read_u64s(hid_t obj, const std::string& name, const std::string& where);

// A rows x cols dataset of T (uint64, float, double); returns the dataset handle for attributes.
template <class T>
h5::Handle write_2d(hid_t group, const std::string& name, std::size_t rows, std::size_t cols, const T* data);

// "uint64" | "float32" | "float64" | "other" for a dataset.
std::string dtype_of(hid_t dset);
// Reads a 2D dataset of T; `where` names it in errors (FormatError on a wrong rank, DTypeError on a wrong type).
template <class T> Image<T> read_2d(hid_t dset, const std::string& where);

}  // namespace qgpu::cache::h5io
