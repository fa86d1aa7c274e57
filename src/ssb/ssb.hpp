#pragma once
// Single-side-band (SSB) ptychography of a loaded 4D-STEM dataset (weak phase object, direct inversion).
//
// Physics and conventions (match the simulator io/sample):
// - Probe in reciprocal space A(K) = aperture(|K| <= alpha/lambda) * exp(-i chi(K)); K in 1/angstrom (cycles).
// - chi(K) in the Krivanek form with polar angle phi of K measured from the scan column (x) axis towards the scan
//   row (y) axis, omega = lambda*|K| (see ssb_math.hpp):
//     chi = 2 pi / lambda * [ C1 w^2/2 + A1 w^2/2 cos 2(phi - A1_angle) + B2 w^3/3 cos(phi - B2_angle)
//                             + A2 w^3/3 cos 3(phi - A2_angle) + C3 w^4/4 ],
//   so pure defocus is chi = pi lambda C1 |K|^2. Sign (docs/conventions.md): with A = exp(-i chi) and the object
//   transmission exp(+i phi), C1 > 0 is the in-focus probe propagated forward by C1 (Fresnel exp(-i pi lambda
//   dz k^2)), i.e. the crossover lies before the specimen: OVERFOCUS. C1 = -defocus of py4DSTEM, abTEM and
//   Kirkland (whose defocus > 0 is underfocus). The calibration attribute defocus_angstrom, the CLI --defocus and
//   the Python defocus= all hold C1 in this sign.
//   B2 and A2 are the Krivanek coefficients C21 and C23 (the 1/3 factor is inside the formula).
// - Detector pixel (r, c) -> K_det = ((r - centre_row), (c - centre_col)) * mrad_per_pixel / 1000 / lambda,
//   brought into the scan frame exactly as dpc::rotate_field does with the CoM field (one convention for the whole
//   API, docs/conventions.md): transpose (swap the row / col components) if asked, then rotate by rotation_deg,
//   (K_row, K_col) -> (cos t K_row - sin t K_col, sin t K_row + cos t K_col): positive t turns the detector row
//   axis towards the col axis. So the (angle_deg, transpose) that dpc::calibrate_rotation reports is what to give.
// - G(K, Q) = sum_R I(K, R) exp(-2 pi i Q.R): forward FFT over the scan (R = scan index * step), Q on the
//   fftfreq grid (spacing 1/(scan_rows*step), 1/(scan_cols*step)).
// - Weak phase object o = exp(i phi) ~ 1 + i phi: G(K, Q) = I0 N i Phi(Q) Gamma(K, Q) with
//   Gamma = A*(K) A(K-Q) - A(K) A*(K+Q) (the two double-overlap "trotters"; zero in the triple overlap when there
//   are no aberrations), I0 = mean counts per BF pixel and frame, N = scan positions, Phi(Q) = (1/N) sum_R phi e^-2piiQR.
// - Reconstruction (weighting "amplitude", the least-squares inverse):
//   Psi(Q) = sum_K G conj(Gamma) / (I0 N max(sum_K w_K |Gamma|^2, floor)) ~ i Phi(Q), floor =
//   kWeightFloor * sum_K w_K (10% of the BF pixel count, ~1/8 of the best covered Q: a regulariser that keeps
//   the thinly covered frequencies near |Q| = 0 and |Q| = 2 alpha from amplifying noise); w_K = pixels summed
//   into K (1 unbinned); Psi(0) = 0 and, for even sizes, Psi = 0 on the Nyquist row/column (Q and -Q alias there).
//   object = 1 + IFFT(Psi) (unnormalised inverse sum), phase = angle(object), amplitude = |object|. Psi is exactly
//   anti-Hermitian, so object = 1 + i phi_lin: phase = atan(phi_lin), amplitude = sqrt(1 + phi_lin^2); the phase
//   is in radians of the object (quantitative for a weak phase object), defined up to its zero mean.
//   Other weightings of the same sums (SsbParams::weighting, docs/benchmarks.md for their truth correlation per dose):
//   "phase" (py4DSTEM's direct_ptychography _reconstruct_SSB_gamma): Psi = sum_{|Gamma| > 1e-3} G conj(Gamma) /
//   |Gamma| / (I0 N sum_K w_K): every K with equal weight, transfer sum|Gamma| / W (a band-pass, not quantitative);
//   "wiener": the least-squares estimate times S / (S + noise) with the Poisson noise power from the counts and the
//   object power S per |Q| ring estimated from the data (ssb_weighting.hpp); "auto": wiener below
//   kAutoWienerBelowCounts counts per frame in the BF disk, amplitude above (provenance: weighting, its reason).
// - The dataset's backend decides: cpu = reference (FFTW complex128 full spectrum, double arithmetic);
//   cuda = gather kernel + batched cuFFT R2C (complex64 half spectrum) on the resident data + a Q-parallel
//   sum kernel + one C2R; vulkan = the same in compute shaders with VkFFT (batched C2C over the scan, sums over the
//   half spectrum, float32 as cuda; Psi and the loss formed on the host in float64; ssb/vulkan/ssb_vulkan.cpp).
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/image.hpp"
#include "core/provenance.hpp"
#include "optics/probe_optics.hpp"
#include "resident/dataset.hpp"

namespace qgpu::ssb {

using Aberrations = optics::Aberrations;  // optics/probe_optics.hpp (the sign convention above)

// Weighting of the double-overlap sum (see above). `automatic` chooses by the dose: the mean counts per frame inside
// the BF disk (I0 times the BF pixel count, from the data).
enum class Weighting { automatic, amplitude, phase, wiener };
std::string weighting_name(Weighting w);         // "auto", "amplitude", "phase", "wiener"
Weighting parse_weighting(const std::string& name);  // InvalidArgument naming the known ones
// auto: wiener below this many counts per frame in the BF disk, amplitude from it on. Measured (bench_ssb_dose,
// docs/benchmarks.md): wiener has the best truth correlation below it, amplitude is as good above it and keeps the
// unit transfer (quantitative phase).
inline constexpr double kAutoWienerBelowCounts = 3e5;

// The probe optics (optics/probe_optics.hpp: energy, semi-angle, step, detector sampling, BF disk, rotation,
// transpose, aberrations, sources) and the weighting.
struct SsbParams : optics::ProbeOptics {
  Weighting weighting = Weighting::automatic;  // reconstruct / preview only (the fit's loss is fixed)
};

// Parameters from ds.metadata()["calibration"] (the file's calibration as the loader reads it, ssb/params.hpp):
// energy_kev, semiangle_mrad, scan_step_angstrom (required: InvalidArgument when missing), optional
// detector_mrad_per_pixel, rotation_deg and defocus_angstrom (-> aberrations.C1, the nominal defocus).
// = resolve_params(metadata, {}) (ssb/params.hpp: the same with a user's overrides).
SsbParams params_from_metadata(const Dataset& ds);
SsbParams params_from_metadata(const nlohmann::json& metadata);  // the same from the metadata object

struct SsbResult {
  Image<float> phase, amplitude;  // scan_rows x scan_cols (/ scan_bin, Reconstructor::at)
  Provenance provenance;
};

// Full-resolution reconstruction (every BF-disk pixel its own K).
SsbResult reconstruct(const Dataset& ds, const SsbParams& p);

// The same with the BF-disk pixels summed in detector_bin x detector_bin blocks (K = the centroid of the summed
// pixels): detector_bin^2 fewer K; exact for slowly varying chi, blurs strongly aberrated disk edges.
SsbResult preview(const Dataset& ds, const SsbParams& p, std::size_t detector_bin = 4);

// G(K, Q) computed once for a dataset, its parameters (all but the aberrations) and a detector bin; each at()
// evaluates only the aberration-dependent part, so a live defocus slider redraws without recomputing G. at() gives
// what preview (bin > 1) or reconstruct (bin 1) gives with those aberrations. Holds G on the dataset's backend
// (groups x scan positions complex values); one caller at a time.
class Reconstructor {
 public:
  Reconstructor(const Dataset& ds, const SsbParams& p, std::size_t detector_bin);
  ~Reconstructor();
  Reconstructor(const Reconstructor&) = delete;
  Reconstructor& operator=(const Reconstructor&) = delete;
  // scan_bin b > 1 (a divisor of both scan dimensions): the coarse answer of a live slider on a large scan, on the
  // (scan_rows / b) x (scan_cols / b) grid: the same sums at that grid's frequencies only (the low-pass part of the
  // spectrum, |Q| below its Nyquist; b^2 less work), the Wiener ring power estimated from them, inverted there: the
  // band-limited object at every b-th position (phase = arg(1 + IFFT), as the full one). cuda and cpu.
  SsbResult at(const Aberrations& ab, std::size_t scan_bin = 1);
  std::size_t detector_bin() const;
  const SsbParams& params() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

struct FitOptions {
  std::size_t trials = 200;      // loss evaluations in all
  std::size_t tpe_trials = 0;    // 0: trials * 3 / 4 TPE trials, the rest Nelder-Mead
  std::uint64_t seed = 1;
  double c1_min = -500, c1_max = 500;  // defocus search range, angstrom
  bool fit_astigmatism = false;        // also fit A1 (as A1 cos 2a, A1 sin 2a in +-max(|c1_min|,|c1_max|)/2)
  // C1-only fits: after the search, the loss at the best C1 with A1 on a polar grid (60 more evaluations, at most
  // 12 angles x 5 magnitudes); when some A1 lowers it by more than kAstigmatismMatters of its value the fit warns that
  // the data show astigmatism and C1 is biased (FitResult::warning; issue 31: 113.7 A for 120 with A1 = 30 A).
  bool check_astigmatism = true;
  std::size_t detector_bin = 4;        // detector binning of the precomputed G(K, Q)
  std::function<void(double)> progress;  // optional: fraction of the trial budget spent, ends with 1.0
};

struct FitResult {
  Aberrations aberrations;           // best found; fields not fitted keep their SsbParams values
  double loss = 0;                   // at the best
  std::vector<double> loss_trace;    // loss of every trial, in order
  std::vector<Aberrations> trial_params;
  std::string warning;               // empty, or the astigmatism check's (FitOptions::check_astigmatism)
  Provenance provenance;
};
inline constexpr double kAstigmatismMatters = 0.02;  // measured gains: 0 without astigmatism (500-1e5
                                                      // counts per frame), 4.5-56 % with A1 = 30 A (test_ssb_fit_truth)

// Aberration fit. Loss (to minimise) = minus the variance of the matched-filter SSB phase image
//   phi_mf(R) = IFFT[ sum_K G conj(Gamma) / (I0 N sqrt(sum_K w_K |Gamma|^2)) ],
// evaluated in Fourier space by Parseval (no inverse FFT per trial). By Cauchy-Schwarz each |Q| term is largest
// when Gamma is proportional to the true transfer, and the noise term does not depend on the aberrations, so the
// loss is minimal (in expectation) at the true aberrations: the sharpest, most contrasted phase.
// Search (C1 alone): seeded Tree-structured Parzen Estimator (n_startup random trials, then good/bad split at the
// gamma = 0.25 loss quantile, Gaussian KDEs l(x), g(x), 24 candidates drawn from l, the max l/g evaluated), then
// Nelder-Mead from the best for the remaining trials. With fit_astigmatism: staged (optimize.hpp,
// minimize_staged_astigmatism: C1 grid, A1 polar grid at the best C1, Nelder-Mead from the 3 best starts; TPE in 3D
// missed the optimum, issue 31). Deterministic. G(K, Q) is computed once. detector_bin > 1 biases |C1| low where chi
// varies across a bin (C1 = -200 A, 64 px detector: -184.7 A at bin 4, -194.6 at bin 1; docs/benchmarks.md).
FitResult fit(const Dataset& ds, const SsbParams& p, const FitOptions& o = {});

}  // namespace qgpu::ssb
