#pragma once
// Internal interface between the CoM dispatcher (dpc/com.cpp) and its two backends.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "dpc/com.hpp"
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

// CoM maps left on the GPU for a following device step (dpc::run_pipeline integrates them there instead of sending
// the host maps back up): `row` and `col` hold one float per frame each, the same bits as the host maps would.
struct DeviceMaps {
  std::shared_ptr<const void> owner;  // the pooled device memory
  const float* row = nullptr;
  const float* col = nullptr;
  std::size_t frames = 0;
};

// center_of_mass (com.hpp) that, when a full-resolution cuda path made the maps (dense or encoded counts), leaves
// them on the GPU in *keep without downloading them: the result's maps then have their shape and provenance but no
// values until download_maps. Otherwise (keep->row stays null) the result is center_of_mass's.
ComResult center_of_mass(const Dataset& ds, const ComOptions& options, DeviceMaps* keep);
// The kept maps into com's maps (pageable host memory, the shared download; ordered after the legacy default
// stream's work).
void download_maps(const DeviceMaps& maps, ComResult& com);
// The same, making the centred DPC and the rotated field of every range of the maps as it arrives (one pass over
// cache-warm values, on the download's threads): `dpc` from centered_dpc_at(..., fill = false) with its reference,
// (field_row, field_col) from rotate_field_unfilled; cos / sin of the angle as rotate_field takes them.
struct FieldFill {
  DpcResult* dpc = nullptr;
  Image<float>* field_row = nullptr;
  Image<float>* field_col = nullptr;
  double cos = 1, sin = 0;
  bool transpose = false;
};
void download_maps(const DeviceMaps& maps, ComResult& com, const FieldFill& fill);
// The mean of the CoM maps (centered_dpc's default reference): double partial sums of fixed blocks, added in order.
std::pair<double, double> mean_com(const ComResult& com);
// centered_dpc with its reference worked out (given: from the caller, else the mean CoM). fill = false: the maps
// are allocated but not written (the caller writes every value with centred_value, com_math.hpp).
DpcResult centered_dpc_at(const ComResult& com, std::pair<double, double> reference, bool given, bool fill = true);
// rotate_field's result with its values allocated but not written (the caller writes every one with rotated_value).
std::pair<Image<float>, Image<float>> rotate_field_unfilled(const DpcResult& dpc, double angle_deg, bool transpose);

// mask: nullptr (whole detector) or det_rows * det_cols values, each 0 or 1 (validated by the caller).
// Both raise Error when the exact sums may have wrapped (see com_sums_may_wrap).
ComMaps com_cpu(const Dataset& ds, const std::uint8_t* mask);   // ds.backend() == cpu
// keep (cuda paths): where to leave the device maps (DeviceMaps), or nullptr.
ComMaps com_cuda(const Dataset& ds, const std::uint8_t* mask, DeviceMaps* keep = nullptr);  // ds.backend() == cuda
ComMaps com_encoded(const Dataset& ds, const std::uint8_t* mask, DeviceMaps* keep = nullptr);  // ds.encoded()
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
ComMaps com_encoded_cuda(const Dataset& ds, const std::uint8_t* mask, DeviceMaps* keep = nullptr);
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
