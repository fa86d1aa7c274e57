#pragma once
// qgpu image on a product cache: the requested images answered from the cache alone (no raw data).
#include <string>
#include <vector>

namespace qgpu::cli {

struct CacheImageRequest {
  std::string file, out, backend, colormap, scale;
  std::vector<double> bf, adf, center, percentiles, rotation;
  bool want_bf = false, want_adf = false, com = false, dpc = false, idpc = false, mean = false;
  std::string load_only_option;  // a load option given (region, binning ...): refused, the cache has no raw data
};

// Writes NAME.{npy,png,json} like `qgpu image` on raw data. A product the cache lacks raises
// cache::ProductUnavailable naming it; a stale cache is reported as a warning on stderr.
void image_from_cache(const CacheImageRequest& r);

}  // namespace qgpu::cli
