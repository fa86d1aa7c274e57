#pragma once
// Reader of Gatan DigitalMicrograph DM3 / DM4 files (io/dm/dm_tags.hpp: the tag tree). The data are the largest 4D
// (or 3D stack) image of ImageList (never the 2D thumbnail): ImageData.Data (one record run: frames contiguous),
// ImageData.DataType (1 int16, 2 float32, 6 uint8, 7 int32, 9 int8, 10 uint16, 11 uint32, 12 float64 read as
// float32), ImageData.Dimensions listed fastest first: 4D (det_cols, det_rows, scan_cols, scan_rows) when
// ImageTags.Meta Data.Data Order Swapped is 1 (GMS STEMx's frame-contiguous order); a 4D image without it is the old
// transposed layout (scan_cols, scan_rows, det_cols, det_rows: one diffraction frame scattered over the file), read
// by the transposed loaders (io/source/transposed_layout.hpp, the detector column fastest; dense). 3D: (det_cols,
// det_rows, frames), scan shape given or square. Calibration from ImageData.Calibrations.Dimension (Scale, Units):
// scan step (nm, um, pm, A), detector mrad/px (mrad, or 1/nm and 1/A with the energy), energy from
// ImageTags.Microscope Info.Voltage.
#include <cstddef>
#include <cstdint>

#include "io/dm/dm_tags.hpp"
#include "io/source/readers.hpp"

namespace qgpu::io::dm {

FileInfo inspect_dm(const std::string& path, const SourceOptions& options);

// The same from a parsed tag tree (for tests and the fuzz harness).
FileInfo describe_dm(const TagTree& tree, const std::string& path, const SourceOptions& options);

}  // namespace qgpu::io::dm
