#pragma once
// `qgpu sample --format dm3|dm4`: the simulated sample as a Gatan DigitalMicrograph file, for tests (io/dm).
#include <functional>
#include <string>

#include "io/sample/sample.hpp"

namespace qgpu::sample {

struct DmSampleOptions {
  unsigned version = 4;     // 3 or 4
  bool transposed = false;  // the old layout: Dimensions scan first, no Data Order Swapped, frames scattered
};

// Writes a tag tree as GMS does for a 4D STEMx image: ImageList/0 a 16 x 16 uint8 thumbnail, ImageList/1 the scan:
// ImageData.Data (s.dtype: uint8/16/32, int8/16/32, float32, float64; the simulated counts clipped to the dtype),
// DataType, Dimensions (det_cols, det_rows, scan_cols, scan_rows), Calibrations.Dimension (detector: mrad per pixel
// in "mrad" for DM3, in "1/nm" for DM4; scan: the step in "nm"), ImageTags.Meta Data (Data Order Swapped = 1,
// Format "Diffraction image"), ImageTags.Microscope Info.Voltage (V). s.big_endian: values big-endian (byte order
// flag 0). Written atomically.
void write_sample_dm(const std::string& path, const SampleSpec& s, const DmSampleOptions& o,
                     const std::function<void(double)>& progress = {});

}  // namespace qgpu::sample
