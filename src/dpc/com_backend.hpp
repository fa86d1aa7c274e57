#pragma once
// Internal interface between the CoM dispatcher (dpc/com.cpp) and its two backends.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "resident/basis/radial_basis.hpp"
#include "resident/dataset.hpp"

namespace qgpu::dpc::detail {

struct ComMaps {
  std::vector<float> row, col;  // one value per frame, scan order
  std::uint64_t empty_frames = 0;
  nlohmann::json radial_basis;  // the basis' centre and radii when the sums came from it (com_encoded), else null
  std::size_t scan_binned_copy = 0;  // the bin of the scan-binned copy the sums came from (com_binned), else 0
  std::string encoded_sums;  // how an encoded resident gave S, Sr, Sc (EncodedResident::moment_sums' `used`), else ""
};

// mask: nullptr (whole detector) or det_rows * det_cols values, each 0 or 1 (validated by the caller).
// Both raise Error when the exact sums may have wrapped (see com_sums_may_wrap).
ComMaps com_cpu(const Dataset& ds, const std::uint8_t* mask);   // ds.backend() == cpu
ComMaps com_cuda(const Dataset& ds, const std::uint8_t* mask);  // ds.backend() == cuda
ComMaps com_encoded(const Dataset& ds, const std::uint8_t* mask);  // ds.encoded(): either backend
// ds.backend() == vulkan: S, Sr, Sc exact on the device (detector/vulkan weighted_sums), the division on the host
// with com_from_sums, so the maps are the CPU reference's bits.
ComMaps com_vulkan(const Dataset& ds, const std::uint8_t* mask);
// Signed-integer and float datasets on either backend: from three virtual images (S, Sr, Sc).
ComMaps com_values(const Dataset& ds, const std::uint8_t* mask);
// Any dataset, scan-binned by b (ComOptions::scan_bin): S, Sr, Sc summed over b x b blocks of positions (exact for
// counts), then the same division: the CoM of the binned scan's frames, (scan_rows / b) x (scan_cols / b) values.
// From the radial basis (binned on the GPU) where the mask is a union of its shells, else from an encoded dataset's
// scan-binned copy when its bin divides b (one decode of its frames), else from three binned virtual images.
ComMaps com_binned(const Dataset& ds, const std::uint8_t* mask, std::size_t b);
// The encoded CoM of a GPU-resident encoded dataset, sums and division on the device (com_encoded's cuda path).
ComMaps com_encoded_cuda(const Dataset& ds, const std::uint8_t* mask);
// com_binned of a GPU-resident encoded dataset on the device (sums, division; only the float maps come back): from
// the radial basis binned on the GPU where the mask is a union of its shells, else from its scan-binned copy at
// exactly bin b. nullopt when neither answers (com_binned's host paths then do).
std::optional<ComMaps> com_encoded_cuda_binned(const Dataset& ds, const std::uint8_t* mask, std::size_t b);

// The three weights of the CoM sums over the detector: 1, det_row and det_col where the mask is on (0 elsewhere).
struct ComWeights {
  std::vector<std::uint32_t> one, row, col;
};
ComWeights com_weights(const Shape4D& sh, const std::uint8_t* mask);

// The radial basis' centre and the radii of the shells a CoM used (provenance).
nlohmann::json basis_json(const RadialBasis& b, const RadialBasis::Ranges& shells);

}  // namespace qgpu::dpc::detail
