#include "resident/dataset.hpp"

#include <cstring>
#include <map>
#include <mutex>
#include <typeindex>

#include "core/error.hpp"
#include "core/parallel_for.hpp"
#include "device/cuda/buffer_pool.hpp"
#include "device/cuda/device_buffer.hpp"
#include "device/vulkan/vk_resident.hpp"
#include "resident/encoded/encoded_resident.hpp"

namespace qgpu {

struct Dataset::Storage {
  Backend backend = Backend::cpu;
  Shape4D shape;
  DType dtype = DType::u16;
  HostBytes host;
  std::shared_ptr<DeviceBuffer> device;
  std::shared_ptr<vulkan::Resident> vk;  // backend vulkan, dense
  std::shared_ptr<EncodedResident> encoded;  // set for representation "encoded" (then host/device stay empty)
  nlohmann::json metadata;
  Provenance provenance;
  mutable std::mutex cache_mutex;
  mutable std::map<std::type_index, std::shared_ptr<const void>> cache;
};

Dataset Dataset::from_host(HostArray4D data, nlohmann::json metadata, Provenance provenance) {
  if (data.bytes.size() != data.shape.elements() * dtype_size(data.dtype))
    throw Error("host dataset byte count does not match its shape");
  Dataset d;
  d.s_ = std::make_shared<Storage>();
  d.s_->backend = Backend::cpu;
  d.s_->shape = data.shape;
  d.s_->dtype = data.dtype;
  d.s_->host = std::move(data.bytes);
  d.s_->metadata = std::move(metadata);
  d.s_->provenance = std::move(provenance);
  return d;
}

Dataset Dataset::from_device(std::shared_ptr<DeviceBuffer> buffer, Shape4D shape, DType dtype,
                             nlohmann::json metadata, Provenance provenance) {
  if (!buffer || buffer->bytes() < shape.elements() * dtype_size(dtype))
    throw Error("device dataset buffer is smaller than its shape");
  Dataset d;
  d.s_ = std::make_shared<Storage>();
  d.s_->backend = Backend::cuda;
  d.s_->shape = shape;
  d.s_->dtype = dtype;
  d.s_->device = std::move(buffer);
  d.s_->metadata = std::move(metadata);
  d.s_->provenance = std::move(provenance);
  return d;
}

Dataset Dataset::from_vulkan(std::shared_ptr<vulkan::Resident> resident, nlohmann::json metadata,
                             Provenance provenance) {
  if (!resident) throw Error("vulkan dataset without a resident");
  Dataset d;
  d.s_ = std::make_shared<Storage>();
  d.s_->backend = Backend::vulkan;
  d.s_->shape = resident->shape();
  d.s_->dtype = resident->dtype();
  d.s_->vk = std::move(resident);
  d.s_->metadata = std::move(metadata);
  d.s_->provenance = std::move(provenance);
  d.s_->provenance.backend = "vulkan";
  return d;
}

Dataset Dataset::from_encoded(std::shared_ptr<EncodedResident> encoded, nlohmann::json metadata,
                              Provenance provenance) {
  if (!encoded) throw InvalidArgument("encoded dataset without an encoded resident");
  if (!encoded->complete())
    throw InvalidArgument("encoded dataset: only " + std::to_string(encoded->frames_appended()) + " of " +
                          std::to_string(encoded->shape().frames()) + " frames appended");
  Dataset d;
  d.s_ = std::make_shared<Storage>();
  d.s_->backend = encoded->backend();
  d.s_->shape = encoded->shape();
  d.s_->dtype = encoded->dtype();
  d.s_->encoded = std::move(encoded);
  d.s_->metadata = std::move(metadata);
  d.s_->provenance = std::move(provenance);
  return d;
}

std::string Dataset::representation() const { return s_->encoded ? "encoded" : "dense"; }
std::string Dataset::storage_schema() const { return s_->encoded ? s_->encoded->storage_schema() : kStorageSchema; }
std::size_t Dataset::resident_bytes() const { return s_->encoded ? s_->encoded->resident_bytes() : nbytes(); }
const EncodedResident* Dataset::encoded() const { return s_->encoded.get(); }

Backend Dataset::backend() const { return s_->backend; }
DType Dataset::dtype() const { return s_->dtype; }
const Shape4D& Dataset::shape() const { return s_->shape; }
const nlohmann::json& Dataset::metadata() const { return s_->metadata; }
const Provenance& Dataset::provenance() const { return s_->provenance; }

const HostBytes& Dataset::host_bytes() const {
  if (s_->encoded)
    throw Error("dataset is resident in the encoded representation (" + std::string(encoded::kSchema).substr(0, 10) +
                "), not as dense host bytes: read it with read() or use an encoded query");
  if (s_->backend != Backend::cpu)
    throw Error("dataset is resident on the GPU (backend " + backend_name(s_->backend) + "), not in host memory");
  return s_->host;
}

const vulkan::Resident& Dataset::vulkan_resident() const {
  if (s_->backend != Backend::vulkan || !s_->vk)
    throw Error("dataset is on backend " + backend_name(s_->backend) + " (" + representation() +
                "), not resident in Vulkan device memory");
  return *s_->vk;
}

const DeviceBuffer& Dataset::device_buffer() const {
  if (s_->encoded)
    throw Error("dataset is resident in the encoded representation (" + std::string(encoded::kSchema).substr(0, 10) +
                "), not as a dense device buffer: read it with read() or use an encoded query");
  if (s_->backend != Backend::cuda)
    throw Error("dataset is on backend " + backend_name(s_->backend) + ", not resident on the CUDA GPU");
  return *s_->device;
}

Dataset Dataset::to_device() const {
  if (s_->backend == Backend::cuda) return *this;
  if (s_->backend == Backend::vulkan) return to_host().to_device();
  if (s_->encoded) {
    Provenance p = s_->provenance;
    p.backend = "cuda";
    return from_encoded(std::make_shared<EncodedResident>(s_->encoded->to_device()), s_->metadata, std::move(p));
  }
  auto buf = resident_buffer(nbytes());
  buf->upload(s_->host.data(), nbytes());
  Provenance p = s_->provenance;
  p.backend = "cuda";
  return from_device(std::move(buf), s_->shape, s_->dtype, s_->metadata, std::move(p));
}

Dataset Dataset::to_host() const {
  if (s_->backend == Backend::cpu) return *this;
  if (s_->encoded) {
    Provenance p = s_->provenance;
    p.backend = "cpu";
    return from_encoded(std::make_shared<EncodedResident>(s_->encoded->to_host()), s_->metadata, std::move(p));
  }
  HostArray4D h;
  h.shape = s_->shape;
  h.dtype = s_->dtype;
  h.bytes.resize(nbytes());
  if (s_->backend == Backend::vulkan) s_->vk->download_frames(h.bytes.data(), 0, s_->shape.frames());
  else s_->device->download(h.bytes.data(), h.bytes.size());
  Provenance p = s_->provenance;
  p.backend = "cpu";
  return from_host(std::move(h), s_->metadata, std::move(p));
}

Dataset Dataset::to_vulkan() const {
  if (s_->backend == Backend::vulkan) return *this;
  if (s_->encoded) not_implemented_on(Backend::vulkan, "the encoded representation");
  if (s_->backend == Backend::cuda) return to_host().to_vulkan();
  if (is_float_dtype(s_->dtype))
    throw DTypeError("the vulkan backend holds integer data so far (uint8/16/32, int8/16/32), not " +
                     dtype_name(s_->dtype) + ": use backend 'cuda' or 'cpu' for it");
  resolve("vulkan");  // BackendUnavailable naming why, without a Vulkan device
  auto vk = std::make_shared<vulkan::Resident>(s_->host.data(), s_->shape, s_->dtype);
  Provenance p = s_->provenance;
  p.backend = "vulkan";
  return from_vulkan(std::move(vk), s_->metadata, std::move(p));
}

Dataset Dataset::to_backend(Backend b) const {
  return b == Backend::cpu ? to_host() : b == Backend::cuda ? to_device() : to_vulkan();
}

Dataset Dataset::to_encoded(std::uint32_t tile) const {
  if (s_->encoded) return *this;
  if (s_->backend == Backend::vulkan) not_implemented_on(Backend::vulkan, "the encoded representation");
  auto enc = std::make_shared<EncodedResident>(s_->shape, s_->dtype, s_->backend, tile);
  enc->append(s_->backend == Backend::cpu ? static_cast<const void*>(s_->host.data()) : s_->device->data(),
              s_->shape.frames());
  Provenance p = s_->provenance;
  p.representation = "encoded";
  p.resident_bytes = enc->resident_bytes();
  p.dense_bytes = enc->dense_bytes();
  return from_encoded(std::move(enc), s_->metadata, std::move(p));
}

HostArray4D Dataset::read(const Region& scan_region, const Region& detector_region) const {
  const Shape4D& sh = s_->shape;
  const Region sr = resolve_region(scan_region, sh.scan_rows, sh.scan_cols, "scan");
  const Region dr = resolve_region(detector_region, sh.det_rows, sh.det_cols, "detector");
  HostArray4D out;
  out.shape = Shape4D{sr.rows, sr.cols, dr.rows, dr.cols};
  out.dtype = s_->dtype;
  out.bytes.resize(out.shape.elements() * dtype_size(s_->dtype));
  read_into(sr, dr, out.bytes.data(), out.bytes.size());
  return out;
}

void Dataset::read_into(const Region& scan_region, const Region& detector_region, void* dst,
                        std::size_t bytes) const {
  const Shape4D& sh = s_->shape;
  const Region sr = resolve_region(scan_region, sh.scan_rows, sh.scan_cols, "scan");
  const Region dr = resolve_region(detector_region, sh.det_rows, sh.det_cols, "detector");
  const std::size_t es = dtype_size(s_->dtype);
  const std::size_t want = Shape4D{sr.rows, sr.cols, dr.rows, dr.cols}.elements() * es;
  if (bytes != want)
    throw InvalidArgument("read_into: the destination holds " + std::to_string(bytes) + " bytes; the region needs " +
                          std::to_string(want));
  if (want == 0) return;
  if (s_->encoded) return s_->encoded->read_into(sr, dr, dst, bytes);
  const std::size_t frame_bytes = sh.frame_pixels() * es, row_bytes = dr.cols * es;
  const std::size_t out_frame = dr.rows * row_bytes;
  auto* out = static_cast<std::uint8_t*>(dst);
  if (s_->backend == Backend::cpu) {  // every frame of the rectangle, on all cores
    parallel_for(sr.rows * sr.cols, [&](std::size_t k) {
      const std::size_t r = sr.row0 + k / sr.cols, c = sr.col0 + k % sr.cols;
      const std::uint8_t* src = s_->host.data() + (r * sh.scan_cols + c) * frame_bytes;
      for (std::size_t i = 0; i < dr.rows; ++i)
        std::memcpy(out + k * out_frame + i * row_bytes, src + ((dr.row0 + i) * sh.det_cols + dr.col0) * es,
                    row_bytes);
    }, 64);
    return;
  }
  if (s_->backend == Backend::vulkan) {  // the region's frames of one scan row downloaded together
    HostBytes scan_row(sr.cols * frame_bytes);
    for (std::size_t i = 0; i < sr.rows; ++i) {
      s_->vk->download_frames(scan_row.data(), (sr.row0 + i) * sh.scan_cols + sr.col0, sr.cols);
      for (std::size_t c = 0; c < sr.cols; ++c)
        for (std::size_t j = 0; j < dr.rows; ++j)
          std::memcpy(out + (i * sr.cols + c) * out_frame + j * row_bytes,
                      scan_row.data() + c * frame_bytes + ((dr.row0 + j) * sh.det_cols + dr.col0) * es, row_bytes);
    }
    return;
  }
  // cuda: one box per scan row of the rectangle: its frames, each the detector rectangle's rows.
  std::vector<DownloadBox> boxes;
  const auto* base = static_cast<const std::uint8_t*>(s_->device->data());
  for (std::size_t i = 0; i < sr.rows; ++i) {
    DownloadBox b;
    b.src = base + ((sr.row0 + i) * sh.scan_cols + sr.col0) * frame_bytes + (dr.row0 * sh.det_cols + dr.col0) * es;
    b.width = row_bytes;
    b.rows = dr.rows;
    b.row_pitch = sh.det_cols * es;
    b.count = sr.cols;
    b.block_pitch = frame_bytes;
    b.host_offset = i * sr.cols * out_frame;
    if (dr.cols == sh.det_cols) {  // whole detector rows: each frame's rectangle is one run
      b.width = out_frame;
      b.rows = 1;
      b.row_pitch = out_frame;
    }
    if (dr.rows == sh.det_rows && dr.cols == sh.det_cols) {  // whole frames: the scan row's run is contiguous
      b.width = b.row_pitch = out_frame;
      b.rows = 1;
    }
    boxes.push_back(b);
  }
  download_boxes(out, boxes);
}

std::shared_ptr<const void> Dataset::cached_slot(const std::type_info& type) const {
  std::lock_guard<std::mutex> lock(s_->cache_mutex);
  auto it = s_->cache.find(std::type_index(type));
  return it == s_->cache.end() ? nullptr : it->second;
}

void Dataset::set_cached_slot(const std::type_info& type, std::shared_ptr<const void> value) const {
  std::lock_guard<std::mutex> lock(s_->cache_mutex);
  if (value) s_->cache[std::type_index(type)] = std::move(value);
  else s_->cache.erase(std::type_index(type));
}

void Dataset::forget_all_cached() const {
  std::lock_guard<std::mutex> lock(s_->cache_mutex);
  s_->cache.clear();
}

nlohmann::json describe(const Dataset& ds) {
  nlohmann::json j = {{"shape", ds.shape().dims()},
                      {"dtype", dtype_name(ds.dtype())},
                      {"backend", backend_name(ds.backend())},
                      {"representation", ds.representation()},
                      {"residency", ds.residency()},
                      {"storage_schema", ds.storage_schema()},
                      {"nbytes", ds.nbytes()},
                      {"resident_bytes", ds.resident_bytes()},
                      {"dense_bytes", ds.dense_bytes()},
                      {"metadata", ds.metadata()},
                      {"provenance", ds.provenance().to_json()}};
  if (ds.encoded()) {
    nlohmann::json b = ds.encoded()->radial_basis_report();
    if (!b.is_null()) j["radial_basis"] = std::move(b);
    nlohmann::json sb = ds.encoded()->scan_binned_report();
    if (!sb.is_null()) j["scan_binned"] = std::move(sb);
  }
  return j;
}

void set_representation(Provenance& p, const Dataset& ds) {
  p.representation = ds.representation();
  p.resident_bytes = ds.resident_bytes();
  p.dense_bytes = ds.dense_bytes();
}

}  // namespace qgpu
