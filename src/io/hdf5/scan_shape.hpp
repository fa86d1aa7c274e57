#pragma once
// The scan shape of an acquisition from what is known about it, in order of trust.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/checked.hpp"

namespace qgpu::io {

struct ScanShapeHints {
  std::size_t given_rows = 0, given_cols = 0;  // the caller's scan shape (0 = not given)
  std::vector<std::size_t> dataset_dims;       // (scan_r, scan_c) of a 4D dataset, else empty
  std::vector<long long> attribute;            // the dataset's scan_shape attribute, else empty
  std::vector<long long> sidecar;              // (NumPixelsY, NumPixelsX) of an ARINA sidecar, else empty
  std::string sidecar_source;                  // how ScanShape::source names it
  long long ntrigger = 0, nimages = 0;         // EIGER/ARINA detectorSpecific metadata (0 = absent)
};

struct ScanShape {
  std::size_t rows = 0, cols = 0;
  std::string source;  // "given", "dataset dims", "attribute scan_shape", the sidecar's source,
                       // "metadata ntrigger x nimages", "square frame count"
};

// Order: given, 4D dataset dims, scan_shape attribute, the ARINA sidecar's NumPixelsY x NumPixelsX, ntrigger x
// nimages (when both exceed 1: one trigger per scan row, when their product is the frame count), a square frame
// count. Every candidate must multiply (checked) to `frames`: a scan_shape attribute or sidecar that does not is a
// FormatError (nothing is reshaped silently). Metadata present with neither ntrigger * nimages nor ntrigger or
// nimages alone equal to `frames` is a FormatError (an acquisition with data files missing). Nothing found:
// FormatError asking for the scan shape. `where` names the data.
ScanShape resolve_scan_shape(std::uint64_t frames, const ScanShapeHints& h, const std::string& where);


}  // namespace qgpu::io
