#pragma once
// The bright-field disk from a summed (or mean) diffraction pattern, robust to a bright diffuse lobe around the disk,
// Poisson noise, hot pixels, a disk cut by the detector edge and small disks (radius >= ~2.5 px).
//
// Method (the idea of py4DSTEM's get_probe_size, thresholds at many levels checked for consistency; our own code):
// the top level is the largest value of the 3x3-median-filtered pattern (a hot pixel or 2x2 cluster cannot set it).
// At 49 thresholds (2 % .. 98 % of the top) the region of the summed pattern above the threshold that holds the
// brightest pixel is taken (4-connected, holes filled) and a least-squares circle is fitted to its edge points away
// from the detector border. A level is round when the circle fits the edge (RMS <= 0.1 r + 0.5 px), the region's area
// is the circle's on the detector within 15 %, the region holds >= half the pixels above the threshold (noise
// fragments do not) and >= 16 pixels, and it does not reach all four detector sides. Its radius is the equal-area
// one when the region is inside the detector, else the circle's. A plateau is a run of round levels whose radius and
// centre change by <= max(0.35 px, 2.5 % r) per level and max(1.5 px, 8 % r) in all: a sharp edge; neighbouring
// plateaus within max(2 px, 15 % r) are one edge (noise splits an edge where it erodes near the top). The disk is
// the edge at the highest levels spanning >= 6 % of the top level (a lobe around the disk is an edge further out, at
// lower levels); its centre and radius are the medians over its widest plateau. Detectors over 256 px a side: the
// levels are found on the pattern binned to <= 256, the circle then at 5 of them at full resolution.
//
// Confidence (0..1) = contrast x roundness x uniqueness: contrast = min(1, edge span / 30 % of the top level),
// roundness from the edge RMS, uniqueness = span / the widest other edge's span (<= 0.4 when a shorter edge lies
// inside). Below kDiskFitConfident the callers warn and name the overrides (--center/--radius, center=/radius=).
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "core/image.hpp"

namespace qgpu::detector {

inline constexpr double kDiskFitConfident = 0.5;

struct DiskFit {
  double center_row = 0, center_col = 0, radius = 0;
  double confidence = 0;                 // 0..1, see above
  std::string method;                    // how the disk was found (one line)
  double level_low = 0, level_high = 0;  // the plateau: fractions of the top level between which the edge holds
  double other_radius = 0;               // radius of the widest other plateau (a second edge), 0: none
  bool center_given = false, radius_given = false;  // a user's values (disk_with_overrides)
  bool confident() const { return confidence >= kDiskFitConfident; }
  // One line for a fit below kDiskFitConfident naming what made it uncertain and the overrides ("" when confident).
  std::string warning() const;
};

// The fit from a summed pattern. InvalidArgument when the pattern holds no counts, or no threshold of it has a round
// edge (the message names the overrides: the disk centre and radius).
DiskFit fit_bf_disk(const SumImage& sum_pattern);

// The disk a computation uses: the given centre and/or radius, the fit's for what is not given (`fit` is called
// only then). Both given: confidence 1, method "given".
DiskFit disk_with_overrides(const std::optional<std::pair<double, double>>& center, const std::optional<double>& radius,
                            const std::function<DiskFit()>& fit);

// center, radius, where each came from (given | fitted), confidence, method, edge levels, a competing edge's radius
// and the warning when not confident: for provenance and JSON answers.
nlohmann::json fit_json(const DiskFit& fit);

}  // namespace qgpu::detector
