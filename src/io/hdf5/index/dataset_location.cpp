#include "io/hdf5/index/dataset_location.hpp"

#include "core/error.hpp"
#include "io/hdf5/h5_handle.hpp"

namespace qgpu::io::h5index {

namespace {

template <class Get> std::string name_of(hid_t id, Get get) {
  const ssize_t n = get(id, nullptr, 0);
  if (n <= 0) return {};
  std::string s(static_cast<std::size_t>(n) + 1, '\0');
  get(id, s.data(), s.size());
  s.resize(static_cast<std::size_t>(n));
  return s;
}

// Relative address of the dataset's object header (HDF5 1.10: H5Oget_info2; 1.12+: object token).
haddr_t header_address(hid_t ds) {
#if H5_VERSION_GE(1, 12, 0)
  H5O_info2_t info;
  if (H5Oget_info3(ds, &info, H5O_INFO_BASIC) < 0) return HADDR_UNDEF;
  haddr_t addr = HADDR_UNDEF;
  if (H5VLnative_token_to_addr(ds, info.token, &addr) < 0) return HADDR_UNDEF;
  return addr;
#else
  H5O_info_t info;
  if (H5Oget_info2(ds, &info, H5O_INFO_BASIC) < 0) return HADDR_UNDEF;
  return info.addr;
#endif
}

// Object identity comparable across calls: the header address (1.10) or the object token (1.12+).
#if H5_VERSION_GE(1, 12, 0)
using ObjectInfo = H5O_info2_t;
bool same_object(hid_t file, const ObjectInfo& a, const ObjectInfo& b) {
  int cmp = 1;
  return H5Otoken_cmp(file, &a.token, &b.token, &cmp) >= 0 && cmp == 0;
}
herr_t info_of(hid_t obj, ObjectInfo* info) { return H5Oget_info3(obj, info, H5O_INFO_BASIC); }
herr_t info_by_name(hid_t loc, const char* name, ObjectInfo* info) {
  return H5Oget_info_by_name3(loc, name, info, H5O_INFO_BASIC, H5P_DEFAULT);
}
#else
using ObjectInfo = H5O_info_t;
bool same_object(hid_t, const ObjectInfo& a, const ObjectInfo& b) { return a.fileno == b.fileno && a.addr == b.addr; }
herr_t info_of(hid_t obj, ObjectInfo* info) { return H5Oget_info2(obj, info, H5O_INFO_BASIC); }
herr_t info_by_name(hid_t loc, const char* name, ObjectInfo* info) {
  return H5Oget_info_by_name2(loc, name, info, H5O_INFO_BASIC, H5P_DEFAULT);
}
#endif

// A path of the dataset inside the file that holds it. H5Iget_name gives the path it was opened by, which lies in
// another file when a soft link led to an external link; then the holder file is searched (data files hold few
// objects).
std::string path_in_holder(hid_t ds, hid_t holder, const std::string& opened_as) {
  ObjectInfo self;
  if (info_of(ds, &self) < 0) return opened_as;
  ObjectInfo there;
  if (!opened_as.empty() && H5Lexists(holder, opened_as.c_str(), H5P_DEFAULT) > 0 &&
      info_by_name(holder, opened_as.c_str(), &there) >= 0 && same_object(holder, self, there))
    return opened_as;
  const haddr_t target = header_address(ds);
  std::string found;
  if (target != HADDR_UNDEF)
    h5::visit_objects(holder, [&](const std::string& path, H5O_type_t, haddr_t addr) {
      if (addr != target) return false;
      found = path;
      return true;
    });
  return found.empty() ? opened_as : found;
}

}  // namespace

DatasetLocation locate_dataset(hid_t ds) {
  h5::QuietErrors quiet;
  DatasetLocation loc;
  loc.file = name_of(ds, [](hid_t id, char* b, size_t n) { return H5Fget_name(id, b, n); });
  loc.dataset_path = name_of(ds, [](hid_t id, char* b, size_t n) { return H5Iget_name(id, b, n); });
  h5::Handle holder(H5Iget_file_id(ds), H5Fclose);
  loc.dataset_path = path_in_holder(ds, holder, loc.dataset_path);
  h5::Handle fcpl(H5Fget_create_plist(holder), H5Pclose);
  size_t sizeof_addr = 0, sizeof_size = 0;
  hsize_t userblock = 0;
  if (H5Pget_sizes(fcpl, &sizeof_addr, &sizeof_size) < 0 || H5Pget_userblock(fcpl, &userblock) < 0)
    throw FormatError("cannot read the address sizes of '" + loc.file + "'");
  loc.request.sizes.addr = static_cast<unsigned>(sizeof_addr);
  loc.request.sizes.len = static_cast<unsigned>(sizeof_size);
  loc.request.sizes.base = userblock;
  const haddr_t addr = header_address(ds);
  loc.header_known = addr != HADDR_UNDEF;
  loc.request.header_addr = addr;
  return loc;
}

}  // namespace qgpu::io::h5index
