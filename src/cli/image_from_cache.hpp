#pragma once
// qgpu image on a product cache: the requested images answered from the cache alone (no raw data).
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cli/outputs.hpp"
#include "display/options.hpp"

namespace qgpu::cli {

struct CacheImageRequest {
  std::string file, colormap;
  std::filesystem::path dir;
  display::DisplayOptions look, signed_look;  // signed_look: the DPC fields'
  bool symmetric = true;                       // their range symmetric about 0 (not with given --percentiles)
  PngFlags png;
  std::optional<double> bf_radius;                   // empty: the cached fitted-disk BF
  std::optional<std::pair<double, double>> adf;      // empty: the cached ADF (radii from the BF disk)
  std::optional<double> disk_radius;                 // --radius: the BF disk radius instead of the cached fit's
  std::vector<double> center, rotation;
  bool want_bf = false, want_adf = false, com = false, dpc = false, idpc = false, mean = false;
  std::string load_only_option;  // a load option given (region, binning ...): refused, the cache has no raw data
};

// Writes NAME.{npy,png,json} like `qgpu image` on raw data. A product the cache lacks raises
// cache::ProductUnavailable naming it; a stale cache is reported as a warning on stderr.
void image_from_cache(const CacheImageRequest& r);

}  // namespace qgpu::cli
