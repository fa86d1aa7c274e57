#include "cache/cache_h5.hpp"

#include "core/checked.hpp"
#include "core/error.hpp"

namespace qgpu::cache::h5io {

namespace {

template <class T> hid_t mem_type();
template <> hid_t mem_type<std::uint64_t>() { return H5T_NATIVE_UINT64; }
template <> hid_t mem_type<float>() { return H5T_NATIVE_FLOAT; }
template <> hid_t mem_type<double>() { return H5T_NATIVE_DOUBLE; }
template <class T> hid_t file_type();
template <> hid_t file_type<std::uint64_t>() { return H5T_STD_U64LE; }
template <> hid_t file_type<float>() { return H5T_IEEE_F32LE; }
template <> hid_t file_type<double>() { return H5T_IEEE_F64LE; }
template <class T> const char* type_name();
template <> const char* type_name<std::uint64_t>() { return "uint64"; }
template <> const char* type_name<float>() { return "float32"; }
template <> const char* type_name<double>() { return "float64"; }

void check(herr_t rc, const std::string& what) {
  if (rc < 0) throw IoError("cannot write cache: " + what);
}

void write_attr(hid_t obj, const std::string& name, hid_t ftype, hid_t mtype, hid_t space, const void* data) {
  h5::QuietErrors quiet;
  if (H5Aexists(obj, name.c_str()) > 0) H5Adelete(obj, name.c_str());
  h5::Handle a(H5Acreate2(obj, name.c_str(), ftype, space, H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
  if (!a.valid()) throw IoError("cannot write cache attribute '" + name + "'");
  check(H5Awrite(a, mtype, data), "attribute '" + name + "'");
}

h5::Handle open_attr(hid_t obj, const std::string& name, const std::string& where) {
  h5::QuietErrors quiet;
  if (H5Aexists(obj, name.c_str()) <= 0) throw FormatError(where + " has no attribute '" + name + "'");
  h5::Handle a(H5Aopen(obj, name.c_str(), H5P_DEFAULT), H5Aclose);
  if (!a.valid()) throw FormatError("cannot open attribute '" + name + "' of " + where);
  return a;
}

std::size_t attr_elements(hid_t a, const std::string& what) {
  h5::Handle space(H5Aget_space(a), H5Sclose);
  const hssize_t n = H5Sget_simple_extent_npoints(space);
  if (n < 0 || n > (hssize_t(1) << 20)) throw FormatError("attribute " + what + " has an invalid size");
  return static_cast<std::size_t>(n);
}

}  // namespace

h5::Handle create_file(const std::string& path) {
  h5::QuietErrors quiet;
  // The 1.8 file format: dense attribute storage, so JSON attributes may exceed 64 KiB (many-part acquisitions).
  h5::Handle fapl(H5Pcreate(H5P_FILE_ACCESS), H5Pclose);
  H5Pset_libver_bounds(fapl, H5F_LIBVER_V18, H5F_LIBVER_V18);
  h5::Handle f(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl), H5Fclose);
  if (!f.valid()) throw IoError("cannot create cache file '" + path + "'");
  return f;
}

h5::Handle open_group(hid_t parent, const std::string& name, bool create) {
  h5::QuietErrors quiet;
  if (H5Lexists(parent, name.c_str(), H5P_DEFAULT) > 0) {
    h5::Handle g(H5Gopen2(parent, name.c_str(), H5P_DEFAULT), H5Gclose);
    if (g.valid()) return g;
  } else if (create) {
    h5::Handle g(H5Gcreate2(parent, name.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Gclose);
    if (g.valid()) return g;
    throw IoError("cannot create group '" + name + "' in the cache");
  }
  return {};
}

void write_string(hid_t obj, const std::string& name, const std::string& value) {
  h5::Handle type(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_size(type, value.empty() ? 1 : value.size());
  H5Tset_strpad(type, H5T_STR_NULLPAD);
  H5Tset_cset(type, H5T_CSET_UTF8);
  h5::Handle space(H5Screate(H5S_SCALAR), H5Sclose);
  const std::string v = value.empty() ? std::string(1, '\0') : value;
  write_attr(obj, name, type, type, space, v.data());
}

void write_int(hid_t obj, const std::string& name, std::int32_t value) {
  h5::Handle space(H5Screate(H5S_SCALAR), H5Sclose);
  write_attr(obj, name, H5T_STD_I32LE, H5T_NATIVE_INT32, space, &value);
}

void write_double(hid_t obj, const std::string& name, double value) {
  h5::Handle space(H5Screate(H5S_SCALAR), H5Sclose);
  write_attr(obj, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, space, &value);
}

void write_u64s(hid_t obj, const std::string& name, const std::vector<std::uint64_t>& values) {
  const hsize_t n = values.size();
  h5::Handle space(H5Screate_simple(1, &n, nullptr), H5Sclose);
  write_attr(obj, name, H5T_STD_U64LE, H5T_NATIVE_UINT64, space, values.data());
}

bool has_attribute(hid_t obj, const std::string& name) {
  h5::QuietErrors quiet;
  return H5Aexists(obj, name.c_str()) > 0;
}

std::vector<std::string> attribute_names(hid_t obj) {
  std::vector<std::string> names;
  auto visit = [](hid_t, const char* name, const H5A_info_t*, void* op) -> herr_t {
    static_cast<std::vector<std::string>*>(op)->push_back(name);
    return 0;
  };
  hsize_t idx = 0;
  H5Aiterate2(obj, H5_INDEX_NAME, H5_ITER_INC, &idx, visit, &names);
  return names;
}

std::string read_string(hid_t obj, const std::string& name, const std::string& where) {
  h5::Handle a = open_attr(obj, name, where);
  h5::Handle type(H5Aget_type(a), H5Tclose);
  if (H5Tget_class(type) != H5T_STRING || H5Tis_variable_str(type) > 0)
    throw FormatError("attribute '" + name + "' of " + where + " is not a fixed-length string");
  const std::size_t size = H5Tget_size(type);
  if (attr_elements(a, name) != 1 || size == 0 || size > (std::size_t(1) << 30))
    throw FormatError("attribute '" + name + "' of " + where + " has an invalid size");
  std::string s(size, '\0');
  if (H5Aread(a, type, s.data()) < 0) throw FormatError("cannot read attribute '" + name + "' of " + where);
  const auto end = s.find('\0');
  if (end != std::string::npos) s.resize(end);
  return s;
}

std::int64_t read_int(hid_t obj, const std::string& name, const std::string& where) {
  h5::Handle a = open_attr(obj, name, where);
  h5::Handle type(H5Aget_type(a), H5Tclose);
  if (H5Tget_class(type) != H5T_INTEGER || attr_elements(a, name) != 1)
    throw FormatError("attribute '" + name + "' of " + where + " is not an integer");
  std::int64_t v = 0;
  if (H5Aread(a, H5T_NATIVE_INT64, &v) < 0) throw FormatError("cannot read attribute '" + name + "' of " + where);
  return v;
}

double read_double(hid_t obj, const std::string& name, const std::string& where) {
  h5::Handle a = open_attr(obj, name, where);
  h5::Handle type(H5Aget_type(a), H5Tclose);
  if (H5Tget_class(type) != H5T_FLOAT || attr_elements(a, name) != 1)
    throw FormatError("attribute '" + name + "' of " + where + " is not a float");
  double v = 0;
  if (H5Aread(a, H5T_NATIVE_DOUBLE, &v) < 0) throw FormatError("cannot read attribute '" + name + "' of " + where);
  return v;
}

std::vector<std::uint64_t> read_u64s(hid_t obj, const std::string& name, const std::string& where) {
  h5::Handle a = open_attr(obj, name, where);
  h5::Handle type(H5Aget_type(a), H5Tclose);
  if (H5Tget_class(type) != H5T_INTEGER) throw FormatError("attribute '" + name + "' of " + where + " is not integer");
  std::vector<std::uint64_t> v(attr_elements(a, name));
  if (H5Aread(a, H5T_NATIVE_UINT64, v.data()) < 0)
    throw FormatError("cannot read attribute '" + name + "' of " + where);
  return v;
}

template <class T>
h5::Handle write_2d(hid_t group, const std::string& name, std::size_t rows, std::size_t cols, const T* data) {
  const hsize_t dims[2] = {rows, cols};
  h5::Handle space(H5Screate_simple(2, dims, nullptr), H5Sclose);
  h5::Handle d(H5Dcreate2(group, name.c_str(), file_type<T>(), space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
               H5Dclose);
  if (!d.valid()) throw IoError("cannot create cache dataset '" + name + "'");
  if (rows * cols > 0) check(H5Dwrite(d, mem_type<T>(), H5S_ALL, H5S_ALL, H5P_DEFAULT, data), "dataset '" + name + "'");
  return d;
}

std::string dtype_of(hid_t dset) {
  h5::Handle type(H5Dget_type(dset), H5Tclose);
  const H5T_class_t c = H5Tget_class(type);
  const std::size_t size = H5Tget_size(type);
  if (c == H5T_INTEGER && size == 8 && H5Tget_sign(type) == H5T_SGN_NONE) return "uint64";
  if (c == H5T_FLOAT && size == 4) return "float32";
  if (c == H5T_FLOAT && size == 8) return "float64";
  return "other";
}

template <class T> Image<T> read_2d(hid_t dset, const std::string& where) {
  if (dtype_of(dset) != type_name<T>())
    throw DTypeError("cache product '" + where + "' is " + dtype_of(dset) + ", not " + type_name<T>());
  h5::Handle space(H5Dget_space(dset), H5Sclose);
  if (H5Sget_simple_extent_ndims(space) != 2) throw FormatError("cache product '" + where + "' is not 2D");
  hsize_t dims[2] = {0, 0};
  H5Sget_simple_extent_dims(space, dims, nullptr);
  const std::uint64_t n = checked_mul(dims[0], dims[1], "cache product " + where);
  const std::uint64_t bytes = checked_mul(n, sizeof(T), "cache product " + where);
  // A declared shape the file does not hold (hostile or unwritten): refused before allocating it.
  if (H5Dget_storage_size(dset) < bytes)
    throw FormatError("cache product '" + where + "' declares " + std::to_string(dims[0]) + " x " +
                      std::to_string(dims[1]) + " values but the file holds fewer (truncated or never written)");
  Image<T> img;
  img.rows = dims[0];
  img.cols = dims[1];
  img.data.resize(n);
  if (n > 0 && H5Dread(dset, mem_type<T>(), H5S_ALL, H5S_ALL, H5P_DEFAULT, img.data.data()) < 0)
    throw FormatError("cannot read cache product '" + where + "'");
  return img;
}

template h5::Handle write_2d<std::uint64_t>(hid_t, const std::string&, std::size_t, std::size_t, const std::uint64_t*);
template h5::Handle write_2d<float>(hid_t, const std::string&, std::size_t, std::size_t, const float*);
template h5::Handle write_2d<double>(hid_t, const std::string&, std::size_t, std::size_t, const double*);
template Image<std::uint64_t> read_2d<std::uint64_t>(hid_t, const std::string&);
template Image<float> read_2d<float>(hid_t, const std::string&);
template Image<double> read_2d<double>(hid_t, const std::string&);

}  // namespace qgpu::cache::h5io
