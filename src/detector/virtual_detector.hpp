#pragma once
// Virtual detectors on a loaded dataset: exact masked sums per probe position, as a SumImage: uint64 for unsigned
// counts, int64 for signed integers (exact), float64 accumulation for float32 data.
// The dataset's backend decides where they run: cuda -> kernels on the resident data, cpu -> the reference.
#include <cstdint>
#include <optional>
#include <utility>

#include "core/image.hpp"
#include "detector/disk_fit.hpp"
#include "detector/mask.hpp"
#include "resident/dataset.hpp"

namespace qgpu::detector {

using Center = std::pair<double, double>;  // (row, col) in detector pixels

// sum_k weights[k] * frame[k] for every scan position: image of scan_rows x scan_cols. scan_bin b > 1 (a divisor of
// both scan dimensions, resident/scan_bin.hpp): the sums of b x b blocks of positions, (scan_rows / b) x
// (scan_cols / b) exact values, binned on the GPU where the radial basis answers (a display-sized answer of a large
// scan), else after the full image.
SumImage virtual_image(const Dataset& ds, const Mask& mask, std::size_t scan_bin = 1);
// Signed integer weights (see SignedMask): exact int64 image for integer data (InvalidArgument when a sum leaves the
// int64 range: never a wrapped value), float64 for float data.
SumImage virtual_image(const Dataset& ds, const SignedMask& mask);

// Bright field: disk of `radius` around `center`; defaults come from fit_bf_disk.
SumImage bf(const Dataset& ds, std::optional<double> radius = {}, std::optional<Center> center = {},
            std::size_t scan_bin = 1);
// Annular dark field: inner <= distance <= outer around `center` (default: the fitted BF disk centre).
SumImage adf(const Dataset& ds, double inner, double outer, std::optional<Center> center = {},
             std::size_t scan_bin = 1);
// Dark field through an off-axis disk (a displaced aperture).
SumImage df(const Dataset& ds, Center center, double radius, std::size_t scan_bin = 1);

// Sum of all frames (detector-shaped), exact for integers.
SumImage sum_pattern(const Dataset& ds);
// Mean diffraction pattern (sum / number of frames) as float32.
Image<float> mean_pattern(const Dataset& ds);
// Largest value of each detector pixel over all frames (detector-shaped), exact.
SumImage max_pattern(const Dataset& ds);

// Bright-field disk of the summed pattern (disk_fit.hpp; the dataset caches it).
DiskFit fit_bf_disk(const Dataset& ds);
// The mean pattern from the summed pattern of `frames` frames (the one implementation of mean_pattern).
Image<float> mean_from_sum(const SumImage& sum_pattern, std::size_t frames);

// ADF radii where the dark-field scattering of the sample is: inner = 1.2 x the BF disk radius (just outside the
// disk edge), outer = min(3 x that radius, distance from the centre to the nearest detector edge). `center` and
// `radius` (the BF disk's) default to the fitted disk's. InvalidArgument when the disk leaves no ring on the detector.
struct AnnulusRadii {
  double inner = 0, outer = 0;
};
AnnulusRadii default_adf_radii(const Dataset& ds, std::optional<Center> center = {},
                               std::optional<double> radius = {});
// The same radii from a fit on a det_rows x det_cols detector.
AnnulusRadii default_adf_radii(const DiskFit& fit, std::size_t det_rows, std::size_t det_cols,
                               std::optional<Center> center = {});

}  // namespace qgpu::detector
