#include "io/hdf5/h5_handle.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <vector>

#include "core/error.hpp"
#include "core/regular_file.hpp"

namespace qgpu::h5 {

QuietErrors::QuietErrors() {
  H5Eget_auto2(H5E_DEFAULT, &func_, &data_);
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
}
QuietErrors::~QuietErrors() { H5Eset_auto2(H5E_DEFAULT, func_, data_); }

namespace {

namespace fs = std::filesystem;

// Refuses, before HDF5 opens it, what cannot be read as a file (core/regular_file.hpp).
void require_readable_regular_file(const std::string& path) { qgpu::require_readable_regular_file(path, "HDF5 file"); }

// The end-of-file address the superblock records (versions 0 to 3), or nothing when it cannot be read.
// The superblock sits at offset 0, 512, 1024, ... (HDF5 file format specification, "Superblock").
std::optional<std::uint64_t> superblock_eof(const std::string& path, std::uint64_t file_size) {
  static const unsigned char kSig[8] = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};
  std::ifstream in(path, std::ios::binary);
  for (std::uint64_t at = 0; at + 64 <= file_size; at = at ? at * 2 : 512) {
    unsigned char b[128] = {0};
    in.clear();
    in.seekg(std::streamoff(at));
    in.read(reinterpret_cast<char*>(b), sizeof(b));
    if (std::memcmp(b, kSig, 8) != 0) continue;
    const int version = b[8];
    std::size_t offsets = 0, pos = 0;
    if (version == 0 || version == 1) {
      offsets = b[13];
      pos = 24 + (version == 1 ? 4 : 0);  // base address follows the fixed fields
      pos += 2 * offsets;                 // base address, free-space info address
    } else if (version == 2 || version == 3) {
      offsets = b[9];
      pos = 12 + 2 * offsets;             // base address, superblock extension address
    } else {
      return std::nullopt;
    }
    if (offsets == 0 || offsets > 8 || pos + offsets > sizeof(b)) return std::nullopt;
    std::uint64_t eof = 0, base = 0;
    for (std::size_t i = 0; i < offsets; ++i) eof |= std::uint64_t(b[pos + i]) << (8 * i);
    const std::size_t base_pos = (version <= 1) ? pos - 2 * offsets : 12;
    for (std::size_t i = 0; i < offsets; ++i) base |= std::uint64_t(b[base_pos + i]) << (8 * i);
    return base + eof;
  }
  return std::nullopt;
}

// The file consistency flags of a version 2 or 3 superblock (byte 11; bit 0: open for writing, bit 2: SWMR
// writing), or nothing for older superblocks (no such flags) or when unreadable.
std::optional<std::uint8_t> superblock_flags(const std::string& path) {
  static const unsigned char kSig[8] = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};
  std::error_code ec;
  const std::uint64_t size = std::filesystem::file_size(path, ec);
  if (ec) return std::nullopt;
  std::ifstream in(path, std::ios::binary);
  for (std::uint64_t at = 0; at + 12 <= size; at = at ? at * 2 : 512) {
    unsigned char b[12] = {0};
    in.clear();
    in.seekg(std::streamoff(at));
    in.read(reinterpret_cast<char*>(b), sizeof(b));
    if (std::memcmp(b, kSig, 8) != 0) continue;
    if (b[8] == 2 || b[8] == 3) return b[11];
    return std::nullopt;
  }
  return std::nullopt;
}

// The descriptions on HDF5's error stack of this thread, innermost first (what the last failed call reported).
std::vector<std::string> error_stack() {
  std::vector<std::string> out;
  H5Ewalk2(
      H5E_DEFAULT, H5E_WALK_UPWARD,
      [](unsigned, const H5E_error2_t* e, void* data) -> herr_t {
        if (e && e->desc) static_cast<std::vector<std::string>*>(data)->emplace_back(e->desc);
        return 0;
      },
      &out);
  return out;
}

bool object_at(hid_t file, const std::string& path, H5O_type_t& type, haddr_t& addr);

bool any_contains(const std::vector<std::string>& lines, const char* what) {
  for (const std::string& l : lines)
    if (l.find(what) != std::string::npos) return true;
  return false;
}

}  // namespace

Handle open_file(const std::string& path) {
  require_readable_regular_file(path);
  QuietErrors quiet;
  if (H5Fis_hdf5(path.c_str()) <= 0) throw IoError("not an HDF5 file: '" + path + "'");
  Handle f(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  if (!f.valid()) {
    // A file a writer holds is not a damaged one (issue 25): HDF5 says which on its error stack.
    const std::vector<std::string> why = error_stack();
    if (any_contains(why, "unable to lock"))
      throw IoError("HDF5 file '" + path + "' is locked by another process (a writer has it open): wait until the "
                    "writer closes it, or, if it no longer changes, read it with HDF5_USE_FILE_LOCKING=FALSE");
    if (any_contains(why, "already open for")) {
      const auto flags = superblock_flags(path);
      throw IoError("HDF5 file '" + path + "' is marked open for writing" +
                    (flags && (*flags & 0x4) ? std::string(" by a SWMR writer") : std::string()) +
                    " (status flags in its superblock): a writer holds it, or one stopped without closing it. If no "
                    "writer is running, `h5clear -s` on the file clears the mark");
    }
    std::error_code ec;
    const std::uint64_t size = std::filesystem::file_size(path, ec);
    if (!ec)
      if (const auto eof = superblock_eof(path, size); eof && *eof > size)
        throw IoError("HDF5 file '" + path + "' is truncated: its superblock records " + std::to_string(*eof) +
                      " bytes, the file has " + std::to_string(size));
    throw IoError("cannot open HDF5 file '" + path + "' (damaged superblock or metadata)");
  }
  return f;
}

Handle open_dataset(hid_t file, const std::string& dataset_path, const std::string& file_path) {
  QuietErrors quiet;
  if (H5Lexists(file, dataset_path.c_str(), H5P_DEFAULT) <= 0)
    throw IoError("dataset '" + dataset_path + "' not found in '" + file_path + "'");
  const htri_t exists = H5Oexists_by_name(file, dataset_path.c_str(), H5P_DEFAULT);
  if (exists == 0) throw IoError("dataset '" + dataset_path + "' not found in '" + file_path + "'");
  if (exists < 0) throw damaged_object(dataset_path, file_path);
  Handle d(H5Dopen2(file, dataset_path.c_str(), H5P_DEFAULT), H5Dclose);
  if (!d.valid()) {
    H5O_type_t type;
    haddr_t addr;
    if (object_at(file, dataset_path, type, addr) && type != H5O_TYPE_DATASET)
      throw IoError("'" + dataset_path + "' in '" + file_path + "' is not a dataset");
    throw damaged_object(dataset_path, file_path);
  }
  return d;
}

FormatError damaged_object(const std::string& object_path, const std::string& file_path) {
  const std::vector<std::string> why = error_stack();
  std::string detail;
  for (std::size_t i = 0; i < why.size() && i < 2; ++i) detail += (i ? "; " : "") + why[i];
  return FormatError("the object header of '" + object_path + "' in '" + file_path +
                     "' is damaged: HDF5 cannot read it" + (detail.empty() ? "" : " (" + detail + ")"));
}

namespace {

// Type and header address of the object a hard link names.
bool object_at(hid_t file, const std::string& path, H5O_type_t& type, haddr_t& addr) {
#if H5_VERSION_GE(1, 12, 0)
  H5O_info2_t info;
  if (H5Oget_info_by_name3(file, path.c_str(), &info, H5O_INFO_BASIC, H5P_DEFAULT) < 0) return false;
  if (H5VLnative_token_to_addr(file, info.token, &addr) < 0) return false;
#else
  H5O_info_t info;
  if (H5Oget_info_by_name2(file, path.c_str(), &info, H5O_INFO_BASIC, H5P_DEFAULT) < 0) return false;
  addr = info.addr;
#endif
  type = info.type;
  return true;
}

struct Walk {
  hid_t file;
  const std::function<bool(const std::string&, H5O_type_t, haddr_t)>& fn;
  std::set<haddr_t> seen;
  bool stop = false;
};

// Names of the hard links of one group, in name order.
std::vector<std::string> hard_links(hid_t file, const std::string& group) {
  std::vector<std::string> names;
  Handle g(H5Gopen2(file, group.c_str(), H5P_DEFAULT), H5Gclose);
  if (!g.valid()) return names;
  auto collect = [](hid_t, const char* name, const H5L_info_t* info, void* op) -> herr_t {
    if (info->type == H5L_TYPE_HARD) static_cast<std::vector<std::string>*>(op)->push_back(name);
    return 0;
  };
  H5Literate(g, H5_INDEX_NAME, H5_ITER_INC, nullptr, collect, &names);
  return names;
}

void walk(Walk& w, const std::string& group, int depth) {
  for (const std::string& name : hard_links(w.file, group)) {
    if (w.stop || w.seen.size() >= kMaxVisitObjects) return;
    const std::string path = (group == "/" ? "/" : group + "/") + name;
    H5O_type_t type;
    haddr_t addr;
    if (!object_at(w.file, path, type, addr)) {  // a damaged object header: say so, do not descend
      if (w.fn(path, H5O_TYPE_UNKNOWN, HADDR_UNDEF)) {
        w.stop = true;
        return;
      }
      continue;
    }
    if (!w.seen.insert(addr).second) continue;
    if (w.fn(path, type, addr)) {
      w.stop = true;
      return;
    }
    if (type == H5O_TYPE_GROUP && depth < kMaxVisitDepth) walk(w, path, depth + 1);
  }
}

}  // namespace

void visit_objects(hid_t file, const std::function<bool(const std::string&, H5O_type_t, haddr_t)>& fn) {
  QuietErrors quiet;
  Walk w{file, fn, {}};
  H5O_type_t type;
  haddr_t root;
  if (object_at(file, "/", type, root)) w.seen.insert(root);
  walk(w, "/", 1);
}

}  // namespace qgpu::h5
