#include "remote/catalog.hpp"

#include <cctype>
#include <cstdio>
#include <filesystem>

#include "device/device.hpp"
#include "io/hdf5/load.hpp"
#include "remote/http_error.hpp"

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
  if (backend == Backend::cuda)
    for (int d : o.devices)
      if (d < 0 || d >= detect().device_count)
        throw InvalidArgument("device " + std::to_string(d) + " does not exist (this machine has " +
                              std::to_string(detect().device_count) + " CUDA devices)");
  if (backend == Backend::cpu && !o.devices.empty())
    std::fprintf(stderr, "qgpu serve: --devices ignored with the cpu backend\n");
  Catalog catalog;
  for (std::size_t i = 0; i < files.size(); ++i) {
    if (cache::is_cache_file(files[i])) {
      cache::Cache c = cache::open(files[i]);
      for (const std::string& change : c.stale())
        std::fprintf(stderr, "qgpu serve: warning: cache '%s' is stale: %s\n", files[i].c_str(), change.c_str());
      catalog.add_cache(id_from_path(files[i]), std::move(c), files[i]);
      continue;
    }
    const int device = (backend == Backend::cuda && !o.devices.empty()) ? o.devices[i % o.devices.size()] : -1;
    DeviceGuard guard(device);
    io::LoadOptions lo;
    lo.backend = backend_name(backend);
    lo.scan_rows = o.scan_rows;
    lo.scan_cols = o.scan_cols;
    lo.pixel_mask = o.pixel_mask;
    lo.representation = o.representation;
    if (o.show_progress) {
      const std::string label = files[i];
      lo.progress = [label, last = -1](double f) mutable {
        const int pct = int(f * 100 + 0.5);
        if (pct / 10 == last / 10 && pct < 100) return;
        last = pct;
        std::fprintf(stderr, "qgpu serve: loading %s %d%%\n", label.c_str(), pct);
      };
    }
    catalog.add(id_from_path(files[i]), io::load(files[i], lo), device, files[i]);
  }
  return catalog;
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
    j = describe(s.ds);
  }
  j["id"] = s.id;
  j["file"] = s.path;
  j["device"] = s.device;
  return j;
}

}  // namespace qgpu::remote
