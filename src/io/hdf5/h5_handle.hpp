#pragma once
// RAII ownership of HDF5 identifiers, and error-stack silencing for probes that are allowed to fail.
#include <hdf5.h>

#include <functional>
#include <string>

#include "core/error.hpp"

namespace qgpu::h5 {

class Handle {
 public:
  using Closer = herr_t (*)(hid_t);
  Handle() = default;
  Handle(hid_t id, Closer close) : id_(id), close_(close) {}
  ~Handle() { reset(); }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  Handle(Handle&& o) noexcept : id_(o.id_), close_(o.close_) { o.id_ = H5I_INVALID_HID; }
  Handle& operator=(Handle&& o) noexcept {
    if (this != &o) {
      reset();
      id_ = o.id_;
      close_ = o.close_;
      o.id_ = H5I_INVALID_HID;
    }
    return *this;
  }
  hid_t get() const { return id_; }
  operator hid_t() const { return id_; }
  bool valid() const { return id_ >= 0; }
  void reset() {
    if (id_ >= 0 && close_) close_(id_);
    id_ = H5I_INVALID_HID;
  }

 private:
  hid_t id_ = H5I_INVALID_HID;
  Closer close_ = nullptr;
};

// While alive, HDF5 prints nothing on failure (we report our own errors).
class QuietErrors {
 public:
  QuietErrors();
  ~QuietErrors();

 private:
  H5E_auto2_t func_ = nullptr;
  void* data_ = nullptr;
};

// Opens a file read-only; IoError naming the path when missing, not HDF5, truncated, locked by a writer, marked open
// for writing (SWMR or a writer that did not close it) or otherwise unreadable (damaged superblock or metadata).
Handle open_file(const std::string& path);
// Opens a dataset; IoError naming the dataset path and the file when absent or not a dataset, FormatError when its
// object header is damaged (HDF5 cannot read it).
Handle open_dataset(hid_t file, const std::string& dataset_path, const std::string& file_path);
// FormatError "the object header of '<object>' in '<file>' is damaged ...", with the first lines of HDF5's error
// stack (call right after the failed HDF5 call).
FormatError damaged_object(const std::string& object_path, const std::string& file_path);

// Visits the objects reachable by hard links from the file's root group, depth first in name order, each object
// once and at most kMaxVisitDepth groups deep, calling fn(absolute path, object type, header address); fn returns
// true to stop. Unlike H5Ovisit it ends on any file: HDF5's visit follows a link cycle forever when the object's
// reference count is 1 (a damaged or hostile file). An object whose header cannot be read (damaged) is reported with
// type H5O_TYPE_UNKNOWN and address HADDR_UNDEF, and not descended into.
inline constexpr int kMaxVisitDepth = 64;
inline constexpr std::size_t kMaxVisitObjects = std::size_t(1) << 20;
void visit_objects(hid_t file, const std::function<bool(const std::string&, H5O_type_t, haddr_t)>& fn);

}  // namespace qgpu::h5
