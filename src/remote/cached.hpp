#pragma once
// Datasets served from a product cache alone (ServedDataset::cache set, no raw data): what the routes share.
// Cached products answer; requests that need the raw counts (frames, windows, arbitrary masks, detectors not
// cached) are refused with 404 naming what is missing. Display work for a cache runs on the host (cpu).
#include "cache/cache.hpp"
#include "core/image.hpp"
#include "remote/catalog.hpp"
#include "remote/virtual_request.hpp"

namespace qgpu::remote {

// HttpError 404: `what` needs the raw data, which a dataset served from a cache does not have.
[[noreturn]] void refuse_raw(const ServedDataset& s, const std::string& what);
// The cached virtual image matching the request (centre default: the cached disk centre; bf radius default: the
// cached disk radius), every value within `tolerance` pixels (query `tolerance`, at most 0.5: the viewer rounds
// its detectors to 0.01 px); ProductUnavailable (404) naming the detector otherwise. The answer's provenance names
// the cached product and its exact geometry (GET virtual also sends it as X-Cached-Product).
Image<std::uint64_t> cached_virtual(const cache::Cache& c, const VirtualRequest& v, double tolerance = 0);

}  // namespace qgpu::remote
