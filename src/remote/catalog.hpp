#pragma once
// The datasets a server holds: each with an id, its device, and a mutex that serializes GPU work on it.
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "cache/cache.hpp"
#include "core/image.hpp"
#include "dpc/com.hpp"
#include "dpc/rotation.hpp"
#include "io/hdf5/load.hpp"
#include "remote/device_guard.hpp"
#include "resident/dataset.hpp"

namespace qgpu::ssb {
class Reconstructor;
}

namespace qgpu::remote {

class LiveSource;

// The rotation-corrected DPC field the service keeps (routes_dpc.cpp), with how its rotation was decided.
struct RotatedField {
  Image<float> row, col;
  nlohmann::json info = nlohmann::json::object();
};

struct ServedDataset {
  std::string id;
  std::string path;  // the file it came from ("" when added in memory)
  Dataset ds;
  int device = -1;   // CUDA device it lives on; -1: cpu, or the current device
  std::mutex work;   // one computation at a time on this dataset
  // Products computed once and kept (each guarded by `work`; a live dataset clears them as frames arrive).
  std::shared_ptr<const dpc::ComResult> com_cache;
  std::shared_ptr<ssb::Reconstructor> ssb_cache;         // of the last bin asked (G(K, Q) kept)
  std::shared_ptr<const Image<float>> max_cache;         // the max pattern
  std::shared_ptr<const dpc::RotationResult> rotation_cache;  // of the centred DPC
  std::shared_ptr<const dpc::DpcResult> dpc_cache;       // the centred DPC
  std::shared_ptr<const RotatedField> field_cache;       // the calibrated rotated field
  std::map<std::size_t, std::shared_ptr<const RotatedField>> binned_field_cache;  // per scan bin, calibrated
  std::shared_ptr<const cache::Cache> cache;  // set: served from a product cache alone (`ds` is empty)
  // set: the growing dataset of a live acquisition (qgpu serve --live): frames are written into `ds` under `work`,
  // and `ds` is replaced (under `work` and `ds_mutex`) when a new series begins.
  std::shared_ptr<LiveSource> live;
  mutable std::mutex ds_mutex;
  // `ds` for a reader that does not hold `work` (a live dataset may be replaced meanwhile).
  Dataset dataset() const {
    std::lock_guard<std::mutex> lock(ds_mutex);
    return ds;
  }
};

class Catalog {
 public:
  // Adds a loaded dataset; the id is made unique (suffix -2, -3, ...) and returned.
  std::string add(std::string id, Dataset ds, int device = -1, std::string path = "");
  // Adds a product cache (remote/cached.hpp: what it answers without the raw data).
  std::string add_cache(std::string id, cache::Cache c, std::string path);
  // HttpError 404 naming the known ids when there is no such dataset.
  ServedDataset& get(const std::string& id) const;
  const std::vector<std::unique_ptr<ServedDataset>>& all() const { return items_; }

 private:
  std::vector<std::unique_ptr<ServedDataset>> items_;
};

// Loads files (round-robin over `devices` when given; each load runs with that device current).
// backend: "auto" | "cuda" | "cpu"; "auto" never falls back to cpu.
struct CatalogOptions {
  std::string backend = "auto";
  std::vector<int> devices;
  bool show_progress = false;
  // How every file is loaded (format, dataset, scan shape, regions, binning, pixel mask, representation, decoder,
  // read threads, ...), carried whole; its backend and progress are set per file from the fields above.
  io::LoadOptions load;
};
Catalog load_catalog(const std::vector<std::string>& files, const CatalogOptions& options);

// Where each file goes: -1 for a product cache (no device) or the cpu backend; on cuda the raw files take
// `devices` round robin (product caches take no turn), or `current` (the current device) when none are given.
std::vector<int> place_files(const std::vector<bool>& is_cache, const std::vector<int>& devices, bool cuda,
                             int current);

// describe(ds) plus the id, file, device index and "placement": backend, device, memory ("gpu" | "host"),
// resident_bytes, dense_bytes, representation and the load's admission limit and free memory on that device.
nlohmann::json describe_served(const ServedDataset& s);

// Runs f(s) with the dataset's device current and its work mutex held; returns f's result and the
// milliseconds it took (waiting for the mutex excluded).
template <class F> auto run_on(ServedDataset& s, F&& f, double& ms) {
  std::lock_guard<std::mutex> lock(s.work);
  DeviceGuard device(s.device);
  const auto t0 = std::chrono::steady_clock::now();
  auto result = f(s);
  ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return result;
}

}  // namespace qgpu::remote
