#pragma once
// Internal: the resolved geometry of an SSB run (the K set) and the backend engines holding G(K, Q).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include <nlohmann/json.hpp>

#include "resident/dataset.hpp"
#include "ssb/ssb.hpp"

namespace qgpu::ssb::detail {

// The K set: BF-disk pixels grouped one per K (reconstruct) or per detector_bin^2 block (preview, fit), CSR.
struct Plan {
  std::size_t scan_rows = 0, scan_cols = 0;
  double step = 0;    // scan step, angstrom
  double lambda = 0;  // angstrom
  double kmax = 0;    // alpha / lambda, 1/angstrom
  double kmax2 = 0;   // kmax^2 (1 + kApertureSlack): the aperture test used everywhere
  std::vector<std::uint32_t> offsets;  // groups + 1 entries into pixels
  std::vector<std::uint32_t> pixels;   // flat detector pixel indices (row * det_cols + col)
  std::vector<double> ky, kx;          // group centroid K in the scan frame (row, col components), 1/angstrom
  std::vector<double> weight;          // pixels in the group
  std::size_t groups() const { return ky.size(); }
  std::size_t scan_size() const { return scan_rows * scan_cols; }
  double total_weight() const { return double(pixels.size()); }
  // Q of scan-frequency index (i, j), 1/angstrom.
  double qy(std::size_t i) const;
  double qx(std::size_t j) const;
};

struct ObjectImages {
  std::vector<float> phase, amplitude;  // (scan_rows / scan_bin) * (scan_cols / scan_bin)
};

// Holds G(K, Q) for a dataset and a plan (computed once at construction) and evaluates the aberration-dependent
// parts: the reconstruction and the fit loss (ssb.hpp defines both).
class Engine {
 public:
  virtual ~Engine() = default;
  // `w` is resolved (not automatic); see ssb.hpp and ssb_weighting.hpp. scan_bin b > 1 (dividing both scan
  // dimensions, checked by the caller): the low-pass reconstruction on the (scan_rows / b) x (scan_cols / b) grid:
  // the same num / den at the frequencies of that grid only (|index| < n / 2b; its own Nyquist row / column dropped),
  // the Wiener ring power estimated from those, inverted at the small size (ssb.hpp, SsbResult::scan_bin).
  virtual ObjectImages reconstruct(const Aberrations& ab, Weighting w, std::size_t scan_bin = 1) = 0;
  virtual double loss(const Aberrations& ab) = 0;
  double mean_counts() const { return i0_; }  // I0: mean counts per BF pixel and frame
  virtual nlohmann::json describe() const = 0;  // FFT, precision, memory

 protected:
  double i0_ = 0;
};

std::unique_ptr<Engine> make_cpu_engine(const Dataset& ds, const Plan& plan);
std::unique_ptr<Engine> make_cuda_engine(const Dataset& ds, const Plan& plan);
std::unique_ptr<Engine> make_vulkan_engine(const Dataset& ds, const Plan& plan);  // ssb/vulkan/ssb_vulkan.cpp

// Reconstruction denominator floor: kWeightFloor * total BF weight.
double weight_floor(const Plan& plan);

}  // namespace qgpu::ssb::detail
