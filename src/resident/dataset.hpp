#pragma once
// A loaded 4D-STEM dataset: native integer counts, resident on the GPU (backend cuda or vulkan) or in host memory
// (backend cpu, the reference). Cheap to copy: copies share the storage.
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <typeinfo>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/dtype.hpp"
#include "core/host_bytes.hpp"
#include "core/provenance.hpp"
#include "device/device.hpp"
#include "resident/shape.hpp"

namespace qgpu {

class DeviceBuffer;
class EncodedResident;
namespace vulkan {
class Resident;
}

// A host copy of (part of) a dataset in its native dtype, [scan_r][scan_c][det_r][det_c] row-major.
struct HostArray4D {
  Shape4D shape;
  DType dtype = DType::u16;
  HostBytes bytes;
  template <class T> const T* as() const { return reinterpret_cast<const T*>(bytes.data()); }
  template <class T> T* as() { return reinterpret_cast<T*>(bytes.data()); }
};

class Dataset {
 public:
  static constexpr const char* kStorageSchema = "dense-frames-v1: [scan_row][scan_col][det_row][det_col] native counts";

  // Host-resident dataset (cpu backend).
  static Dataset from_host(HostArray4D data, nlohmann::json metadata, Provenance provenance);
  // GPU-resident dataset (cuda backend) taking ownership of a device buffer of shape.elements() * dtype bytes.
  static Dataset from_device(std::shared_ptr<DeviceBuffer> buffer, Shape4D shape, DType dtype,
                             nlohmann::json metadata, Provenance provenance);
  // Vulkan-resident dense dataset (backend vulkan): the frames in device memory segments (device/vulkan/vk_resident.hpp).
  static Dataset from_vulkan(std::shared_ptr<vulkan::Resident> resident, nlohmann::json metadata,
                             Provenance provenance);
  // Encoded dataset (representation "encoded", format encoded-v1) on the resident's backend: host memory for cpu,
  // the GPU for cuda. The resident must be complete (every frame appended).
  static Dataset from_encoded(std::shared_ptr<EncodedResident> encoded, nlohmann::json metadata,
                              Provenance provenance);

  Backend backend() const;
  DType dtype() const;
  const Shape4D& shape() const;
  std::string representation() const;  // "dense" | "encoded"
  std::string residency() const { return backend() == Backend::cpu ? "host" : "gpu"; }
  std::string storage_schema() const;  // the dense layout or the encoded format (encoded-v1 ...)
  std::size_t nbytes() const { return shape().nbytes(dtype_size(dtype())); }  // dense size of the counts
  std::size_t dense_bytes() const { return nbytes(); }
  std::size_t resident_bytes() const;  // bytes actually held (dense: nbytes; encoded: streams, index, totals)
  // The encoded resident, nullptr for a dense dataset.
  const EncodedResident* encoded() const;
  const nlohmann::json& metadata() const;
  const Provenance& provenance() const;

  // Raw dense storage: host bytes (cpu) or the device buffer (cuda); the other, or an encoded dataset, raises Error
  // naming the representation (encoded datasets are read through read(), the queries or encoded()).
  const HostBytes& host_bytes() const;
  const DeviceBuffer& device_buffer() const;
  // The Vulkan segments of a dense vulkan dataset; Error naming where the dataset lives otherwise.
  const vulkan::Resident& vulkan_resident() const;

  // The same counts on the other side: a GPU-resident copy of a host dataset, or a host copy of a GPU one; the
  // representation is kept (an encoded dataset copies its encoded bytes).
  Dataset to_device() const;
  Dataset to_host() const;
  // The same dense counts resident on the vulkan backend (BackendUnavailable without a Vulkan device; encoded
  // datasets are not held on vulkan yet).
  Dataset to_vulkan() const;
  // to_host, to_device or to_vulkan.
  Dataset to_backend(Backend b) const;
  // The same counts in the encoded representation on the same backend (encoded as one pass over the dense
  // storage; *this when already encoded). Tiles of `tile` scan positions.
  Dataset to_encoded(std::uint32_t tile = 512) const;

  // Copies a scan x detector rectangle to the host in the native dtype (encoded: decodes only that rectangle).
  HostArray4D read(const Region& scan_region = {}, const Region& detector_region = {}) const;
  // The same into `dst` (e.g. a numpy array's memory), which holds exactly `bytes` = the rectangle's size
  // (InvalidArgument otherwise). cuda: straight from the GPU through pinned buffers on several threads.
  void read_into(const Region& scan_region, const Region& detector_region, void* dst, std::size_t bytes) const;

  // Per-dataset cache of derived data, one slot per type (the BF disk fit, the per-frame totals on the GPU, ...):
  // typed on both sides, so a slot can only hold what its readers expect. forget_cached<T>() empties it.
  template <class T> std::shared_ptr<const T> cached() const {
    return std::static_pointer_cast<const T>(cached_slot(typeid(T)));
  }
  template <class T> void set_cached(std::shared_ptr<const T> value) const { set_cached_slot(typeid(T), std::move(value)); }
  template <class T> void forget_cached() const { set_cached_slot(typeid(T), nullptr); }
  // Empties every slot: the counts changed (a live acquisition wrote frames into this resident). The caller makes
  // sure no computation still uses a slot's data (the service holds the dataset's work lock).
  void forget_all_cached() const;

 private:
  std::shared_ptr<const void> cached_slot(const std::type_info& type) const;
  void set_cached_slot(const std::type_info& type, std::shared_ptr<const void> value) const;
  struct Storage;
  std::shared_ptr<Storage> s_;
};

// Dataset description as JSON (shape, dtype, representation, residency, storage_schema, resident_bytes,
// dense_bytes, metadata, provenance).
nlohmann::json describe(const Dataset& ds);

// Stamps a product's provenance with the dataset's representation, resident_bytes and dense_bytes.
void set_representation(Provenance& p, const Dataset& ds);

}  // namespace qgpu
