#pragma once
// The one place where a computation's BF disk is defaulted: its centre and radius as given, else the fitted disk's
// (detector::fit_bf_disk, computed only when something is missing and asked for), and the detector sampling derived
// from it. Used by SSB and parallax; provenance() says where each value came from and, when the fit was used, its
// confidence (and warning).
#include <optional>
#include <utility>

#include <nlohmann/json.hpp>

#include "detector/virtual_detector.hpp"

namespace qgpu::detector {

class DiskDefaults {
 public:
  DiskDefaults(const Dataset& ds, std::optional<std::pair<double, double>> center, std::optional<double> radius)
      : ds_(ds), center_(std::move(center)), radius_(radius) {}
  double center_row() const { return center_ ? center_->first : fit().center_row; }
  double center_col() const { return center_ ? center_->second : fit().center_col; }
  double radius() const { return radius_ ? *radius_ : fit().radius; }
  const char* center_source() const { return center_ ? "given" : "fitted BF disk"; }
  const char* radius_source() const { return radius_ ? "given" : "fitted BF disk"; }
  // {"bf_disk_fit": fit_json} when the fit was used, else {}: merged into the computation's provenance.
  nlohmann::json provenance() const {
    nlohmann::json j = nlohmann::json::object();
    if (fit_) j["bf_disk_fit"] = fit_json(disk_with_overrides(center_, radius_, [this] { return *fit_; }));
    return j;
  }

  // Detector sampling: `given` mrad per pixel when > 0, else the semiangle over the disk radius (given or fitted;
  // callers check that radius is > 0 first), with where it came from.
  struct Sampling {
    double mrad_per_pixel;
    const char* source;
  };
  Sampling sampling(double given_mrad_per_pixel, double semiangle_mrad) const {
    if (given_mrad_per_pixel > 0) return {given_mrad_per_pixel, "given"};
    return {semiangle_mrad / radius(),
            radius_ ? "semiangle / given disk_radius" : "semiangle / fitted BF disk radius"};
  }

 private:
  const DiskFit& fit() const {
    if (!fit_) fit_ = fit_bf_disk(ds_);
    return *fit_;
  }
  const Dataset& ds_;
  std::optional<std::pair<double, double>> center_;
  std::optional<double> radius_;
  mutable std::optional<DiskFit> fit_;
};

}  // namespace qgpu::detector
