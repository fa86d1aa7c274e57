#pragma once
// Centre of mass (CoM) of every diffraction pattern, and the DPC field (CoM minus a reference centre).
//
// Coordinates are detector pixel indices: row r in [0, det_rows), col c in [0, det_cols); pixel (0, 0) has
// CoM (0, 0). Per frame the sums S = sum I, Sr = sum I*r, Sc = sum I*c are accumulated exactly in uint64 on
// both backends and turned into CoM = (double(Sr) / double(S), double(Sc) / double(S)) rounded to float by the
// same host/device function (dpc/com_math.hpp), so the cpu and cuda backends agree bit for bit.
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "core/image.hpp"
#include "core/provenance.hpp"
#include "resident/dataset.hpp"

namespace qgpu::dpc {

struct ComOptions {
  // Optional det_rows * det_cols mask (row-major) of 0/1 values restricting the sums; empty = whole detector.
  std::vector<std::uint8_t> mask;
  // b > 1 (a divisor of both scan dimensions): the CoM of b x b blocks of positions (their sums S, Sr, Sc added, then
  // divided: the CoM of the binned scan), (scan_rows / b) x (scan_cols / b) maps; a display-sized answer of a large
  // scan, binned on the GPU where the radial basis answers.
  std::size_t scan_bin = 1;
};

struct ComResult {
  Image<float> com_row, com_col;    // scan_rows x scan_cols (/ scan_bin), detector pixel coordinates
  std::uint64_t empty_frames = 0;   // frames with S == 0: given the detector centre
  Provenance provenance;
};

// CoM of every frame, computed where the dataset lives: host reference for backend cpu, CUDA kernel on the
// resident buffer for backend cuda. Frames with S == 0 get ((det_rows - 1) / 2, (det_cols - 1) / 2).
// Raises InvalidArgument for a mask of the wrong size, a mask value other than 0/1 or a mask selecting nothing;
// Error if a frame's weighted sums could exceed uint64 (only conceivable for uint32 counts on huge detectors).
ComResult center_of_mass(const Dataset& ds, const ComOptions& options = {});

struct DpcResult {
  Image<float> dpc_row, dpc_col;  // CoM - reference, detector pixels
  double ref_row = 0, ref_col = 0;
  Provenance provenance;
};

// Subtracts `reference` (row, col) or, when none is given, the mean CoM over all frames (in double).
DpcResult centered_dpc(const ComResult& com, std::optional<std::pair<double, double>> reference = {});

}  // namespace qgpu::dpc
