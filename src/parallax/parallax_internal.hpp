#pragma once
// Internal: the pieces the parallax front end (parallax.cpp), the alignment loop (alignment.cpp) and the fit of the
// shifts (fit.cpp) share, as ssb_internal.hpp does for SSB.
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "parallax/parallax.hpp"
#include "parallax/parallax_backend.hpp"

namespace qgpu::parallax::detail {

inline void require(bool ok, const std::string& what) {
  if (!ok) throw InvalidArgument("parallax: " + what);
}

struct Geometry {
  double center_row = 0, center_col = 0, radius_px = 0, mrad_per_px = 0, lambda = 0;
  std::size_t bin = 1;
  double counts_per_pixel = -1;  // mean counts per BF pixel per frame (auto binning); -1: bin given
  std::string mrad_source, center_source, radius_source;
  nlohmann::json disk_fit;  // DiskDefaults::provenance(): the fit's confidence when it was used
};

// The BF-disk groups of a dataset (validated parameters; the geometry used goes into `geo`).
Plan make_plan(const Dataset& ds, const ParallaxParams& p, Geometry& geo);
// The engine of the dataset's backend (no fallback).
std::unique_ptr<Engine> make_engine(const Dataset& ds, const Plan& plan);

struct Run {
  detail::Plan plan;
  Geometry geo;
  std::unique_ptr<detail::Engine> engine;
  std::vector<detail::Shift> measured, fitted;
  std::vector<float> bf;
  ParallaxFit fit;
};

// Staged alignment and the fit (alignment.cpp).
Run align_and_fit(const Dataset& ds, const ParallaxParams& p);

// The fit of the shifts (fit.cpp). Least squares s = M d + b over the groups in use, with the rms of the residual and
// of the model; InvalidArgument when the groups do not span the detector plane.
void fit_linear(const Plan& plan, const std::vector<Shift>& s, const std::vector<bool>& use, double m[4], double b[2],
                double& residual_rms, double& model_rms);
void residuals(const Plan& plan, const std::vector<Shift>& s, const std::vector<bool>& use, const double m[4],
               const double b[2], double& residual_rms, double& model_rms);
// The joint fit of the linear model on the correlation windows, from (m, b); returns the summed correlation.
double refine_jointly(const Plan& plan, const std::vector<float>& windows, const std::vector<Shift>& centre,
                      const std::vector<bool>& use, std::size_t w, double m[4], double b[2]);
// Polar decomposition of the shift matrix m (any units): m T^transpose = P R(phi), P symmetric (up to its sign the
// aberration matrix S of parallax.hpp), transpose = det m < 0.
struct Polar {
  bool transpose = false;
  double phi = 0, p00 = 0, p01 = 0, p11 = 0;
};
Polar polar(const double m[4]);
// The fit from the final linear model: run.fit's matrix, C1, A1, rotation, transpose, sign and confidences.
void finish_fit(Run& run, const ParallaxParams& p, const double m[4], const double b[2]);

}  // namespace qgpu::parallax::detail
