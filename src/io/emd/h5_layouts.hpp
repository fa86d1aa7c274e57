#pragma once
// HDF5 files of the other ecosystems, read by the hdf5 reader with their calibration:
//  - py4DSTEM / emdfile EMD 1.0: root attributes emd_group_type = "file", version_major 1, version_minor 0; root
//    groups (emd_group_type "root") hold array groups (emd_group_type "array", python_class "DataCube" for a
//    datacube) with `data` (Rx, Ry, Qx, Qy) and dim0..dim3 ([start, step] or one value per pixel, attributes name and
//    units); py4DSTEM's Calibration is the root's metadatabundle/calibration group (datasets R_pixel_size,
//    Q_pixel_size, R_pixel_units, Q_pixel_units, qx0_mean, qy0_mean, ...).
//  - HyperSpy .hspy: root attribute file_format = "HyperSpy"; /Experiments/<title>/data with groups axis-0..axis-N
//    (attributes name, scale, offset, units, size, navigate); a 4D-STEM signal is (scan y, scan x, det y, det x)
//    with the two navigation axes first.
// A file whose header fields are malformed (wrong type, missing group, dims that disagree with the data) raises
// FormatError naming the field; a calibration value that is well formed but unusable (<= 0, not finite, a unit that
// is not a length / angle) is left out with a warning, as for every reader.
#include <hdf5.h>

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "io/calibration.hpp"

namespace qgpu::io::emd {

struct H5Layout {
  std::string kind;            // "py4DSTEM EMD 1.0" | "HyperSpy"
  std::string dataset;         // the 4D (or 3D) data
  Calibration calibration;     // offered in the file's own words (sources name the group and field)
  nlohmann::json metadata = nlohmann::json::object();
  std::vector<std::string> warnings;  // for FileInfo::warnings (e.g. several datacubes, the first taken)
};

// The layout of `file` when it is an EMD 1.0 or HyperSpy file; nullopt otherwise. dataset_path "" picks the file's
// 4D data; a given dataset_path outside the layout's arrays returns nullopt (the plain HDF5 reading). det_rows /
// det_cols are not known yet: the beam centre is checked by the caller.
std::optional<H5Layout> detect_layout(hid_t file, const std::string& path, const std::string& dataset_path);

// Offers the calibration an EMD / HyperSpy axis states: a scan step from a length unit, a detector pixel in mrad,
// or in 1/A and 1/nm (kept as detector_inv_angstrom_per_pixel, and as mrad when energy_kev is already known).
// Returns false (with a warning) when the unit is not one of these.
bool offer_scan_step(Calibration& cal, double scale, const std::string& unit, const std::string& source);
bool offer_detector_pixel(Calibration& cal, double scale, const std::string& unit, const std::string& source);

}  // namespace qgpu::io::emd
