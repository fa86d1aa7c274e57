#include "io/hdf5/acquisition.hpp"

#include <algorithm>
#include <filesystem>
#include <map>

#include "core/error.hpp"
#include "io/hdf5/file_info.hpp"
#include "io/hdf5/h5_handle.hpp"

namespace qgpu::io {

namespace {

namespace fs = std::filesystem;

constexpr const char* kDataGroup = "/entry/data";

bool link_exists(hid_t file, const std::string& path) {
  h5::QuietErrors quiet;
  // Check each level: H5Lexists fails (rather than returning false) when an intermediate group is missing.
  std::size_t pos = 0;
  while ((pos = path.find('/', pos + 1)) != std::string::npos)
    if (H5Lexists(file, path.substr(0, pos).c_str(), H5P_DEFAULT) <= 0) return false;
  return H5Lexists(file, path.c_str(), H5P_DEFAULT) > 0;
}

// Number of a link named data_NNNNNN (six digits), or -1.
long link_number(const std::string& name) {
  if (name.size() != 11 || name.rfind("data_", 0) != 0) return -1;
  long n = 0;
  for (std::size_t i = 5; i < 11; ++i) {
    if (name[i] < '0' || name[i] > '9') return -1;
    n = n * 10 + (name[i] - '0');
  }
  return n;
}

// The data_NNNNNN links of /entry/data by number (empty when there are none).
std::map<long, std::string> numbered_links(hid_t master) {
  std::map<long, std::string> links;
  if (!link_exists(master, kDataGroup)) return links;
  h5::QuietErrors quiet;
  h5::Handle g(H5Gopen2(master, kDataGroup, H5P_DEFAULT), H5Gclose);
  if (!g.valid()) return links;
  auto visit = [](hid_t, const char* name, const H5L_info_t*, void* op) -> herr_t {
    const long n = link_number(name);
    if (n >= 0) (*static_cast<std::map<long, std::string>*>(op))[n] = name;
    return 0;
  };
  H5Literate(g, H5_INDEX_NAME, H5_ITER_INC, nullptr, visit, &links);
  return links;
}

std::string resolve_against(const std::string& name, const std::string& master_path) {
  const fs::path p(name);
  if (p.is_absolute()) return p.lexically_normal().string();
  return (fs::path(master_path).parent_path() / p).lexically_normal().string();
}

std::string virtual_string(hid_t dcpl, std::size_t i, bool file_name) {
  auto get = [&](char* buf, std::size_t n) {
    return file_name ? H5Pget_virtual_filename(dcpl, i, buf, n) : H5Pget_virtual_dsetname(dcpl, i, buf, n);
  };
  const ssize_t len = get(nullptr, 0);
  if (len < 0) return {};
  std::string s(std::size_t(len) + 1, '\0');
  get(s.data(), s.size());
  s.resize(std::size_t(len));
  return s;
}

// Parts of a virtual dataset: each mapping must take a whole source dataset into a block of whole frames, and the
// blocks must tile the frames in order.
std::vector<PartRef> virtual_parts(hid_t ds, hid_t dcpl, const std::string& master_path, const std::string& ds_path) {
  const std::string where = "virtual dataset '" + ds_path + "' in '" + master_path + "'";
  auto complex = [&](const std::string& why) {
    return FormatError(where + " is not a plain concatenation of whole source datasets (" + why +
                       "); only mappings of whole sources to consecutive frame blocks are supported");
  };
  h5::Handle space(H5Dget_space(ds), H5Sclose);
  const int rank = H5Sget_simple_extent_ndims(space);
  if (rank != 3) throw complex("rank " + std::to_string(rank) + ", expected (frames, det_r, det_c)");
  hsize_t dims[3];
  H5Sget_simple_extent_dims(space, dims, nullptr);
  std::size_t count = 0;
  if (H5Pget_virtual_count(dcpl, &count) < 0 || count == 0) throw complex("no mappings");
  std::vector<PartRef> parts;
  for (std::size_t i = 0; i < count; ++i) {
    const std::string m = "mapping " + std::to_string(i);
    PartRef p;
    const std::string fname = virtual_string(dcpl, i, true), dname = virtual_string(dcpl, i, false);
    if (fname.empty() || dname.empty()) throw complex(m + " has no source name");
    if (fname.find('%') != std::string::npos || dname.find('%') != std::string::npos)
      throw complex(m + " uses a printf-style source name");
    p.name = "virtual " + m + " of '" + ds_path + "'";
    p.file = fname == "." ? master_path : resolve_against(fname, master_path);
    p.dataset_path = dname;
    h5::QuietErrors quiet;
    h5::Handle vs(H5Pget_virtual_vspace(dcpl, i), H5Sclose);
    h5::Handle ss(H5Pget_virtual_srcspace(dcpl, i), H5Sclose);
    if (!vs.valid() || !ss.valid()) throw complex(m + " has no readable selections");
    hsize_t lo[3], hi[3];
    if (H5Sget_select_bounds(vs, lo, hi) < 0) throw complex(m + " has an unbounded selection");
    const hssize_t npoints = H5Sget_select_npoints(vs);
    const hsize_t box = (hi[0] - lo[0] + 1) * (hi[1] - lo[1] + 1) * (hi[2] - lo[2] + 1);
    if (npoints < 0 || hsize_t(npoints) != box) throw complex(m + " selects a non-rectangular block");
    if (lo[1] != 0 || lo[2] != 0 || hi[1] + 1 != dims[1] || hi[2] + 1 != dims[2])
      throw complex(m + " covers part of the detector");
    const H5S_sel_type st = H5Sget_select_type(ss);
    if (st != H5S_SEL_ALL && H5Sget_select_npoints(ss) != H5Sget_simple_extent_npoints(ss))
      throw complex(m + " takes part of its source dataset");
    p.has_frame_range = true;
    p.first_frame = lo[0];
    p.frames = hi[0] - lo[0] + 1;
    parts.push_back(std::move(p));
  }
  std::sort(parts.begin(), parts.end(), [](const PartRef& a, const PartRef& b) { return a.first_frame < b.first_frame; });
  std::uint64_t next = 0;
  for (const PartRef& p : parts) {
    if (p.first_frame != next)
      throw complex("frames " + std::to_string(next) + ".." + std::to_string(p.first_frame) +
                    " are not covered exactly once");
    next += p.frames;
  }
  if (next != dims[0])
    throw complex("mappings cover " + std::to_string(next) + " of " + std::to_string(dims[0]) + " frames");
  return parts;
}

// One dataset at ds_path: an external link (followed), a virtual dataset (its sources) or a plain dataset.
PartList single_dataset(hid_t master, const std::string& master_path, const std::string& ds_path) {
  PartList out;
  out.dataset_path = ds_path;
  if (!link_exists(master, ds_path)) throw IoError("dataset '" + ds_path + "' not found in '" + master_path + "'");
  PartRef ref = resolve_link(master, master_path, ds_path);
  if (ref.file != master_path) {
    out.kind = "external link";
    out.parts.push_back(std::move(ref));
    return out;
  }
  h5::Handle ds = h5::open_dataset(master, ds_path, master_path);
  h5::Handle dcpl(H5Dget_create_plist(ds), H5Pclose);
  if (H5Pget_layout(dcpl) == H5D_VIRTUAL) {
    out.kind = "virtual dataset";
    out.parts = virtual_parts(ds, dcpl, master_path, ds_path);
    return out;
  }
  out.kind = "dataset";
  out.parts.push_back(std::move(ref));
  return out;
}

}  // namespace

PartRef resolve_link(hid_t file, const std::string& file_path, const std::string& link_path) {
  PartRef p;
  p.name = link_path;
  p.file = file_path;
  p.dataset_path = link_path;
  h5::QuietErrors quiet;
  H5L_info_t li;
  if (H5Lget_info(file, link_path.c_str(), &li, H5P_DEFAULT) < 0 || li.type != H5L_TYPE_EXTERNAL) return p;
  std::vector<char> buf(li.u.val_size);
  unsigned flags = 0;
  const char* target_file = nullptr;
  const char* target_obj = nullptr;
  if (H5Lget_val(file, link_path.c_str(), buf.data(), buf.size(), H5P_DEFAULT) < 0 ||
      H5Lunpack_elink_val(buf.data(), buf.size(), &flags, &target_file, &target_obj) < 0)
    throw IoError("cannot read external link " + link_path + " in '" + file_path + "'");
  p.file = resolve_against(target_file, file_path);
  p.dataset_path = target_obj;
  if (!fs::exists(p.file))
    throw IoError("external link " + link_path + " in '" + file_path + "' points to missing file '" + p.file + "'");
  return p;
}

// True when `path` names a dataset (a group of a default name, e.g. /data, is skipped and the search goes on).
// FormatError when a hard link names an object whose header HDF5 cannot read: a damaged file, not a missing dataset.
bool dataset_exists(hid_t file, const std::string& path, const std::string& file_path) {
  if (!link_exists(file, path)) return false;
  h5::QuietErrors quiet;
  H5O_info_t oi;
  if (H5Oget_info_by_name2(file, path.c_str(), &oi, H5O_INFO_BASIC, H5P_DEFAULT) >= 0)
    return oi.type == H5O_TYPE_DATASET;
  H5L_info_t li;
  if (H5Lget_info(file, path.c_str(), &li, H5P_DEFAULT) >= 0 && li.type == H5L_TYPE_HARD)
    throw h5::damaged_object(path, file_path);
  return false;  // a dangling soft or external link: the search goes on
}

PartList find_parts(hid_t master, const std::string& master_path, const std::string& dataset_path) {
  if (!dataset_path.empty()) return single_dataset(master, master_path, dataset_path);
  if (dataset_exists(master, kDefaultDatasetPaths.front(), master_path)) return single_dataset(master, master_path, kDefaultDatasetPaths.front());
  const std::map<long, std::string> links = numbered_links(master);
  if (!links.empty()) {
    PartList out;
    out.kind = "linked files";
    long expect = 1;
    for (const auto& [n, name] : links) {
      const std::string path = std::string(kDataGroup) + "/" + name;
      if (n != expect) {
        char want[32];
        std::snprintf(want, sizeof(want), "data_%06ld", expect);
        throw IoError("link " + std::string(kDataGroup) + "/" + want + " is missing in '" + master_path +
                      "' (found " + path + "): the acquisition's data files must be numbered from 1 without gaps");
      }
      ++expect;
      out.parts.push_back(resolve_link(master, master_path, path));
    }
    out.dataset_path = out.parts.front().name;
    if (out.parts.size() == 1) out.kind = out.parts.front().file == master_path ? "dataset" : "external link";
    return out;
  }
  for (const std::string& p : kDefaultDatasetPaths)
    if (dataset_exists(master, p, master_path)) return single_dataset(master, master_path, p);
  std::vector<std::string> unreadable;
  const std::vector<std::string> found = discover_candidates(master_path, unreadable);
  if (found.empty() && !unreadable.empty()) {
    std::string names;
    for (std::size_t i = 0; i < unreadable.size() && i < 3; ++i) names += (i ? ", '" : "'") + unreadable[i] + "'";
    if (unreadable.size() > 3) names += " and " + std::to_string(unreadable.size() - 3) + " more";
    throw FormatError("no readable 4D-STEM dataset in '" + master_path + "': the object header" +
                      (unreadable.size() > 1 ? "s of " : " of ") + names + (unreadable.size() > 1 ? " are" : " is") +
                      " damaged (HDF5 cannot read " + (unreadable.size() > 1 ? "them" : "it") + ")");
  }
  if (found.empty()) throw IoError("no 4D-STEM dataset (integer, rank 3 or 4) found in '" + master_path + "'");
  return single_dataset(master, master_path, found.front());
}

}  // namespace qgpu::io
