#pragma once
// Parallax / tilt-corrected bright field (tcBF) of a loaded 4D-STEM dataset.
//
// Each bright-field (BF) disk pixel K (or a detector_bin x detector_bin block of them) gives a virtual image
// v_K(R) = I_K(R) / mean_R I_K - 1. For a defocused probe (chi = pi lambda C1 |K|^2, the SSB convention, see
// ssb/ssb.hpp) and a weak phase object these are all the same defocus-CTF-filtered image, shifted:
//   v_K(R) = f(R - s(K)),   s(K) = -(C1 I + A) lambda K_scan   (angstrom; A = 2-fold astigmatism),
// i.e. a feature moves by -C1 * (beam tilt in rad). C1 here is ssb::Aberrations::C1 (chi = +pi lambda C1 k^2;
// the simulator's defocus_angstrom), A1/A1_angle as in ssb.hpp (angle from the scan column axis towards the row axis).
//
// Steps: (1) virtual images of the BF-disk groups (pixels within disk_radius - edge_px of the fitted disk centre);
// (2) cross-correlate each with the reference (first the BF image = mean of the v_K), the images apodised by an edge
//     window and every correlation divided by the windows' own (the scan is not periodic), smoothed by a 0.7 px
//     Gaussian, peak searched within +-search_px of the predicted shift, sub-pixel by a 3-point parabola per axis
//     (parallax_backend.hpp: Engine::correlate, edge_window); staged: the groups within 30 %
//     of the disc first (prediction 0), then 55 %, 80 %, 100 % predicted by the previous stage's linear fit (a
//     crystal correlates at every lattice vector; this keeps each stage on the right peak); after each stage the
//     reference is re-made as the mean of all images Fourier-shifted back by the predicted shifts; each stage's
//     least-squares fit of the peaks is refined by the joint fit (the model maximising the summed correlations of the
//     groups: not biased by the dose); from the second stage on every group is correlated with its own sideband
//     class's model at each frequency (double sideband, or only the K - Q or the K + Q beam inside the aperture: a
//     least-squares estimate from the other groups; parallax_backend.hpp, sideband_model; docs/design.md);
// (3) least-squares fit s = M d + b (d = group centroid offset from the disk centre, detector pixels (row, col);
//     s in scan pixels (row, col)); M in angstrom per radian = -S R(angle) T^transpose, with R and T the
//     dpc/rotation.hpp conventions (transpose first, then rotate; positive angles turn the row axis towards the
//     col axis), S = [[C1 - A1 cos 2a, A1 sin 2a], [A1 sin 2a, C1 + A1 cos 2a]] in (row, col);
//     transpose = det M < 0; the polar decomposition gives S up to its sign together with the angle up to 180 deg
//     (the data of (C1, angle) and (-C1, angle + 180) are the same for a weak phase object with its phase negated):
//     the sign of C1 is taken from the nominal defocus (params.c1_sign_hint, from metadata defocus_angstrom) when
//     given, else from the skewness of the CTF-sign-corrected tilt-corrected image (atoms have positive phase);
// (4) tilt-corrected image: every v_K pixel (r, c) is deposited bilinearly at ((r, c) - s(K)) * upsample on the
//     upsampled grid (kernel density: sum of values / sum of weights, weights below kWeightFloor * mean -> 0),
//     with s(K) from the linear fit (use_fitted_shifts) or as measured.
#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/image.hpp"
#include "core/provenance.hpp"
#include "optics/bf_groups.hpp"
#include "optics/probe_optics.hpp"
#include "optics/resolve.hpp"
#include "resident/dataset.hpp"

namespace qgpu::parallax {

// The probe optics (optics/probe_optics.hpp): energy_kev, semiangle_mrad, scan_step_angstrom (each > 0),
// detector_mrad_per_pixel (0: semiangle / disk radius), disk_center / disk_radius (default: the BF disk fit) and
// sources (where the calibration values came from, recorded in the provenance). Parallax fits the rotation, transpose
// and aberrations itself: it does not read those fields (the nominal C1 gives c1_sign_hint in resolve_params).
struct ParallaxParams : optics::ProbeOptics {
  double edge_px = 1.0;            // pixels closer than this to the disk edge are left out (partly lit)
  std::size_t detector_bin = 0;    // 0: auto: the smallest bin giving each group >= kAutoMinGroupCounts counts
                                   // per frame (while >= kAutoMinGroups groups remain), then <= kAutoMaxGroups
  std::size_t upsample = 2;        // tilt-corrected image sampling: scan step / upsample
  std::size_t iterations = 3;      // extra align / re-sum passes over the whole disc after the staged ones
  std::size_t search_px = 4;       // correlation peak searched within +-search_px of the predicted shift
  bool use_fitted_shifts = true;   // shift-and-sum with the linear fit (else the measured shifts)
  double c1_sign_hint = 0;         // > 0 or < 0: the sign of C1 is known (nominal defocus); 0: from the image
  // Where this (possibly cropped) detector lies on the whole detector: the bin x bin groups are taken on the whole
  // detector's grid (optics/bf_groups.hpp), so a crop (the MPI run's gathered BF-disk box) groups the same pixels.
  optics::DetectorOrigin detector_origin;
};

inline constexpr std::size_t kAutoMaxGroups = 1024;
// Auto binning by dose: a group's virtual image needs about 10 counts per frame for its correlation peak to hold
// (measured on the sample at low dose: docs/benchmarks.md, SSB and parallax), and the fit wants enough groups.
inline constexpr double kAutoMinGroupCounts = 10.0;
inline constexpr std::size_t kAutoMinGroups = 48;
inline constexpr double kWeightFloor = 0.05;

// The settings' checks (edge_px, detector_bin, upsample, iterations, search_px, c1_sign_hint), one place for run()
// and the front ends that check before loading: InvalidArgument naming the first bad one as name_of(field) (empty:
// "parallax: " + field; the CLI passes its flags).
void check_settings(const ParallaxParams& p, const optics::Namer& name_of = {});

// The file's calibration with a user's overrides (optics::resolve, Missing::refuse: energy, semi-angle and step are
// required; "parallax: " names), c1_sign_hint = the sign of the nominal C1 (the file's defocus_angstrom or the
// override). Rotation and the aberrations other than C1's sign are not used. Settings keep their defaults.
ParallaxParams resolve_params(const nlohmann::json& metadata, const optics::Overrides& overrides,
                              const optics::Namer& name_of = {});

// The same with no overrides and nothing required: a value the file lacks is left 0 (the caller gives it; run()
// refuses a missing energy, semi-angle or step); InvalidArgument for a present value that is not a number.
ParallaxParams params_from_metadata(const Dataset& ds);

struct ParallaxFit {
  double C1 = 0;                       // angstrom, ssb convention (chi = +pi lambda C1 k^2)
  double A1 = 0, A1_angle = 0;         // 2-fold astigmatism, angstrom, rad
  double rotation_deg = 0;             // dpc/rotation.hpp convention, [0, 360)
  bool transpose = false;
  double matrix[4] = {0, 0, 0, 0};     // M, angstrom per rad, row-major (row, col)
  double offset_row = 0, offset_col = 0;  // b, scan pixels
  double residual_rms_px = 0;          // of s - (M d + b)
  double model_rms_px = 0;             // of M d
  double confidence = 0;               // max(0, 1 - residual / model): 0 = no parallax seen (in focus / noise)
  std::string sign_method;             // "nominal defocus sign" | "skewness of the tilt-corrected image"
  double sign_confidence = 0;          // 1 for the nominal sign, min(1, |skewness|) otherwise
  // shifts_determined: confidence >= kParallaxConfident (every fit of the simulated samples from 1000 counts per frame
  // up reaches 0.73; in-focus data (no parallax to see) and a lattice lost to noise give 0.0-0.40 with a meaningless C1)
  // and conditioning() >= kWellConditioned: the shift field's singular values are |C1 + A1| and |C1 - A1|; when their
  // ratio is small the field is nearly rank one, its determinant's sign (the transpose) and the rotation are noise
  // (issue 31: wrong fits at 500 counts per frame had A1 = 0.4-1.0 |C1|, right ones <= 0.26 |C1|).
  // sign_determined: sign_confidence >= kSignConfident (the skewness of a correctly CTF-corrected image of atoms is
  // >= 0.76 on the simulated samples of docs/benchmarks.md from 5000 counts per frame; every wrong sign seen had
  // <= 0.18). determined = both: a C1 whose sign is undetermined is reported as such, with its magnitude |C1|
  // (the angle is then known only up to 180 degrees; the transpose and A1 are known).
  double conditioning() const;  // min / max of |C1 + A1|, |C1 - A1| (0 when both are 0)
  bool shifts_determined() const;
  bool sign_determined() const;
  bool determined() const;
  std::string warning() const;  // empty when determined
};
inline constexpr double kParallaxConfident = 0.6;
inline constexpr double kSignConfident = 0.3;
inline constexpr double kWellConditioned = 0.3;  // A1 <= 0.54 |C1|

struct ParallaxResult {
  Image<float> image;  // tilt-corrected, (scan_rows * upsample) x (scan_cols * upsample)
  Image<float> bf;     // plain BF contrast image (mean of the v_K), scan_rows x scan_cols
  ParallaxFit fit;
  // Per group: centroid offset from the disk centre (detector px) and the measured shift (scan px).
  std::vector<double> det_row, det_col, shift_row, shift_col;
  Provenance provenance;
};

// Full run: align, fit, tilt-corrected image.
ParallaxResult run(const Dataset& ds, const ParallaxParams& p);

// Only the alignment and the fit (no upsampled image; image is empty): e.g. for the rotation calibration.
ParallaxResult fit_only(const Dataset& ds, const ParallaxParams& p);

// JSON of a fit (C1, A1, A1_angle, rotation_deg, transpose, matrix, residuals, confidences, conventions).
nlohmann::json fit_json(const ParallaxFit& f);

}  // namespace qgpu::parallax
