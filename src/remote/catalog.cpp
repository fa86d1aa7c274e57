#include "remote/catalog.hpp"

#include <cctype>
#include <cstdio>
#include <filesystem>

#include "device/device.hpp"
#include "io/hdf5/load.hpp"
#include "remote/http_error.hpp"
#include "remote/live_source.hpp"

namespace qgpu::remote {

namespace {

std::string id_from_path(const std::string& path) {
  std::string id = std::filesystem::path(path).stem().string();
  for (char& c : id)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_') c = '_';
  return id.empty() ? "dataset" : id;
}

}  // namespace

std::string Catalog::add(std::string id, Dataset ds, int device, std::string path) {
  std::string unique = id;
  for (int n = 2;; ++n) {
    bool taken = false;
    for (const auto& it : items_) taken = taken || it->id == unique;
    if (!taken) break;
    unique = id + "-" + std::to_string(n);
  }
  auto s = std::make_unique<ServedDataset>();
  s->id = unique;
  s->path = std::move(path);
  s->ds = std::move(ds);
  s->device = device;
  items_.push_back(std::move(s));
  return unique;
}

std::string Catalog::add_cache(std::string id, cache::Cache c, std::string path) {
  const std::string unique = add(std::move(id), Dataset{}, -1, std::move(path));
  items_.back()->cache = std::make_shared<const cache::Cache>(std::move(c));
  return unique;
}

ServedDataset& Catalog::get(const std::string& id) const {
  for (const auto& it : items_)
    if (it->id == id) return *it;
  std::string known;
  for (const auto& it : items_) {
    if (!known.empty()) known += ", ";
    known += it->id;
  }
  throw HttpError(404, "unknown dataset '" + id + "' (known: " + known + ")");
}

Catalog load_catalog(const std::vector<std::string>& files, const CatalogOptions& o) {
  if (files.empty()) throw InvalidArgument("no file to serve");
  bool raw = false;  // product caches need no backend
  for (const std::string& f : files) raw = raw || !cache::is_cache_file(f);
  const Backend backend = raw ? resolve(o.backend) : Backend::cpu;  // auto without a GPU: BackendUnavailable
  // vulkan: every operation runs there or answers 503 naming what is not on vulkan (parallax, ...), never elsewhere
  if (backend == Backend::cuda)
    for (int d : o.devices)
      if (d < 0 || d >= detect().device_count)
        throw InvalidArgument("device " + std::to_string(d) + " does not exist (this machine has " +
                              std::to_string(detect().device_count) + " CUDA devices)");
  if (backend == Backend::cpu && !o.devices.empty())
    std::fprintf(stderr, "qgpu serve: --devices ignored with the cpu backend\n");
  std::vector<bool> is_cache(files.size());
  for (std::size_t i = 0; i < files.size(); ++i) is_cache[i] = cache::is_cache_file(files[i]);
  const std::vector<int> placed =
      place_files(is_cache, o.devices, backend == Backend::cuda, backend == Backend::cuda ? current_device() : -1);
  Catalog catalog;
  for (std::size_t i = 0; i < files.size(); ++i) {
    if (is_cache[i]) {
      cache::Cache c = cache::open(files[i]);
      for (const std::string& change : c.stale())
        std::fprintf(stderr, "qgpu serve: warning: cache '%s' is stale: %s\n", files[i].c_str(), change.c_str());
      catalog.add_cache(id_from_path(files[i]), std::move(c), files[i]);
      continue;
    }
    const int device = placed[i];
    DeviceGuard guard(device);
    io::LoadOptions lo = o.load;
    lo.backend = backend_name(backend);
    if (o.show_progress) {
      const std::string label = files[i];
      lo.progress = [label, last = -1](double f) mutable {
        const int pct = int(f * 100 + 0.5);
        if (pct / 10 == last / 10 && pct < 100) return;
        last = pct;
        std::fprintf(stderr, "qgpu serve: loading %s %d%%\n", label.c_str(), pct);
      };
    }
    try {
      catalog.add(id_from_path(files[i]), io::load(files[i], lo), device, files[i]);
    } catch (const OutOfMemory& e) {  // admission (InvalidArgument) or allocation: name the device it was placed on
      if (device < 0) throw;
      throw OutOfMemory("'" + files[i] + "' does not fit on CUDA device " + std::to_string(device) + ": " + e.what());
    } catch (const InvalidArgument& e) {
      if (device < 0) throw;
      throw InvalidArgument("'" + files[i] + "' placed on CUDA device " + std::to_string(device) + ": " + e.what());
    }
  }
  return catalog;
}

std::vector<int> place_files(const std::vector<bool>& is_cache, const std::vector<int>& devices, bool cuda,
                             int current) {
  std::vector<int> out(is_cache.size(), -1);
  std::size_t turn = 0;
  for (std::size_t i = 0; i < is_cache.size(); ++i) {
    if (is_cache[i] || !cuda) continue;
    out[i] = devices.empty() ? current : devices[turn++ % devices.size()];
  }
  return out;
}

nlohmann::json describe_served(const ServedDataset& s) {
  nlohmann::json j;
  if (s.cache) {
    j = s.cache->root_attributes().value("dataset", nlohmann::json::object());
    j["representation"] = "product cache";
    j["backend"] = "cache";  // answers come from the file; the backend that built it is in its provenance
    j["residency"] = "host";
    j["cache"] = {{"format_version", s.cache->format_version()}, {"products", s.cache->products()},
                  {"stale", s.cache->stale()}};
  } else {
    j = describe(s.dataset());
  }
  j["id"] = s.id;
  j["file"] = s.path;
  j["device"] = s.device;
  nlohmann::json placement = {{"backend", j.value("backend", "")}, {"device", s.device},
                              {"memory", s.cache || s.dataset().backend() == Backend::cpu ? "host" : "gpu"}};
  for (const char* k : {"representation", "resident_bytes", "dense_bytes"})
    if (j.contains(k)) placement[k] = j[k];
  if (!s.cache) {  // the admission decision of the load, on that device
    const Dataset ds = s.dataset();
    const nlohmann::json& params = ds.provenance().parameters;
    if (params.contains("admission"))
      for (const char* k : {"limit_bytes", "free_bytes"})
        if (params["admission"].contains(k)) placement["admission_" + std::string(k)] = params["admission"][k];
  }
  j["placement"] = placement;
  if (s.live) j["live"] = s.live->status();
  return j;
}

}  // namespace qgpu::remote
