#pragma once
// Rotation calibration between the scan and detector axes from the DPC field (host; the maps are small).
//
// Conventions (all in (row, col) index space):
// - transpose swaps the row/col components of the field first: (f_row, f_col) -> (f_col, f_row);
// - then a rotation by angle a: (f_row, f_col) -> (cos a * f_row - sin a * f_col, sin a * f_row + cos a * f_col),
//   i.e. positive angles turn the row axis towards the col axis (counter-clockwise on an image shown with
//   row 0 at the top).
// - curl = d f_col / d row - d f_row / d col, divergence = d f_row / d row + d f_col / d col, both with central
//   differences on the interior pixels (one-pixel border dropped); "rms" is over those pixels.
// calibrate_rotation returns (angle, transpose) such that rotate_field(dpc, angle, transpose) is the field in
// scan axes: curl-free, and pointing up the projected potential (see calibrate_rotation).
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/image.hpp"
#include "core/provenance.hpp"
#include "dpc/com.hpp"
#include "optics/bf_groups.hpp"
#include "resident/dataset.hpp"

namespace qgpu::dpc {

struct RotationResult {
  double angle_deg = 0;  // in [0, 360)
  bool transpose = false;
  double curl_rms = 0;        // of the corrected field
  double divergence_rms = 0;  // of the corrected field
  // How well the data determine the answer, each in [0, 1] (0: no preference at all):
  //   angle_margin = 1 - curl_rms / divergence_rms (a real DPC field is curl-free but divergent; rotating it by 90
  //                  degrees swaps the two, so this is the contrast of the curl over angles);
  //   transpose_margin = 1 - curl_rms / (best RMS curl with the other transpose flag);
  //   flip_margin = min(1, |divergence skewness|) (the 180-degree choice rests on the sign of the skewness).
  // confidence = the smallest.
  double angle_margin = 0, transpose_margin = 0, flip_margin = 0, confidence = 0;
  // Standard error of angle_deg (degrees) from the data themselves, given the transpose and 180-degree choice: the
  // estimator's loss linearised at the answer, the noise level from the field's transverse power (rotation.cpp,
  // SpectralForm::sigma_at); kRotationSigmaCap when the data hold no angle; NaN when the parallax decided (its fit
  // gives none). Over 16 noise draws per case (bench/rotation_bound.py, docs/benchmarks.md) the truth lay within
  // 2 sigma in 91 % of 560 draws (92 % of the determined ones; a little optimistic: 95 % would be exact) and
  // within 3 sigma in 99 %.
  double angle_sigma_deg = 0;
  // determined = confidence >= kRotationConfident and angle_sigma_deg <= kRotationSigmaDetermined. When not
  // determined, callers warn and a user should give the rotation explicitly (e.g. a strongly defocused probe blurs
  // the DPC field, or too few counts / scan positions: see rotation_bound.py for what the data allow).
  bool determined = false;
  // Which method decided: "com_curl" (calibrate_rotation(dpc)) or "parallax" (calibrate_rotation(ds, dpc) when the
  // CoM answer is not determined and the parallax shift field is more confident; confidence is then the parallax's).
  std::string method = "com_curl";
  // Coarse scan: angles_deg = 0, 1, ..., 359; curl_by_angle has 2 * 360 values, [transpose][angle]:
  // curl_by_angle[a] for transpose = false, curl_by_angle[360 + a] for transpose = true (RMS curl).
  std::vector<double> angles_deg, curl_by_angle;
  Provenance provenance;
};

// Finds the transpose flag and angle minimising the RMS curl of the corrected field. The curl is linear in
// (cos a, sin a), so RMS curl^2 is a quadratic form in them: the 1-degree scan is reported, and the minimum is
// refined exactly from that form. Angle and angle + 180 give the same curl; as in LiberTEM (guess_corrections)
// the one kept makes the divergence skewed negative (third central moment < 0): the beam is deflected towards
// the atom columns, so the field is +grad(potential) and its divergence is strongly negative on the columns.
// Ties (zero skew) keep the angle in [0, 180). Maps must be at least 3x3 and finite (else InvalidArgument).
RotationResult calibrate_rotation(const DpcResult& dpc);

inline constexpr double kRotationConfident = 0.1;
// A CoM answer is determined only when its standard error is at most this (degrees): 2 deg off is then 4 sigma.
inline constexpr double kRotationSigmaDetermined = 0.5;
inline constexpr double kRotationSigmaCap = 180.0;
// calibrate_rotation(ds, dpc) keeps a CoM answer this confident without running the parallax (in focus at 60000
// counts per frame the simulator gives 0.63; defocused by 120 A at 80 kV, 0.14 with the angle 1.2 degrees off).
inline constexpr double kComTrusted = 0.5;

// Skewness of the divergence of the field corrected by (angle_deg, transpose): negative for the right 180-degree
// choice (the rule of calibrate_rotation).
double divergence_skewness(const DpcResult& dpc, double angle_deg, bool transpose);

// Rotation calibration that survives defocus: the CoM curl minimum above when its confidence >= kComTrusted;
// otherwise the parallax shift field of the dataset is consulted (parallax/parallax.hpp: the BF-pixel image shifts are -C1 R(angle) T^transpose
// times the tilt, so they give angle and transpose directly, independent of the object's contrast). Decision rule
// (issue 31): the parallax votes only when it sees a shift field (fit confidence >= parallax::kParallaxConfident); in
// focus, or too noisy, it has no signal and the CoM answer stands (undetermined: a warning), whatever the two
// confidences. A determined CoM answer (confidence >= kRotationConfident) is replaced only by a parallax fit that is
// determined, sign included, and more confident. When it votes it gives the transpose and the angle up to 180 degrees; the 180-degree choice is the
// parallax's sign of C1 when that is determined (nominal defocus sign, else the skewness of the tilt-corrected
// image), else the CoM rule (divergence skewed negative) at the parallax's angle. Confidence = min(fit confidence,
// confidence of the 180-degree choice). Method, both answers and the parallax fit are in the provenance. Without
// calibration metadata the parallax runs with placeholder optics (only its C1 value depends on them, not the angle);
// when the parallax cannot run (InvalidArgument, e.g. a tiny scan) the CoM answer is returned with the reason in
// provenance parameters.parallax. The parallax uses the given BF disk centre / radius (detector pixels of `ds`), the
// fitted disk's otherwise. `ds` may be a detector crop (the MPI run's gathered BF-disk box): detector_origin is where
// it lies on the whole detector (ParallaxParams::detector_origin).
RotationResult calibrate_rotation(const Dataset& ds, const DpcResult& dpc,
                                  std::optional<std::pair<double, double>> disk_center = {},
                                  std::optional<double> disk_radius = {}, optics::DetectorOrigin detector_origin = {});

// A one-line warning for an undetermined calibration ("" when determined), naming the margins.
std::string rotation_warning(const RotationResult& r);

// The corrected field (row, col): transpose first, then rotate by angle_deg (conventions above).
std::pair<Image<float>, Image<float>> rotate_field(const DpcResult& dpc, double angle_deg, bool transpose);

}  // namespace qgpu::dpc
