#pragma once
// Writes EMD 1.0 files as py4DSTEM (>= 0.14) / emdfile read them (emdfile io/write.py, classes/array.py,
// classes/metadata.py; py4DSTEM datacube/datacube.py, data/calibration.py):
//   /                      emd_group_type "file", version_major 1, version_minor 0, UUID, authoring_program, ...
//   /<root>                emd_group_type "root", python_class "Root"
//     metadatabundle/calibration   emd_group_type "metadata", python_class "Calibration": R_pixel_size,
//                          Q_pixel_size (numbers), R_pixel_units, Q_pixel_units (strings), QR_flip (bool), each with
//                          its `type` attribute (number / string / bool), qx0_mean / qy0_mean for a beam centre
//     <array>              emd_group_type "array", python_class "DataCube" (or "Array"): data (+ units), dim0..
//                          ([start, step] with name and units)
// String attributes are variable-length UTF-8 (what h5py writes for str, so emdfile's == 'file' tests hold).
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/dtype.hpp"
#include "resident/shape.hpp"

namespace qgpu::io {

// One array of the file: a 4D datacube, or a 2D product.
struct EmdArraySpec {
  std::string name;                  // group name under the root
  std::string python_class = "Array";
  std::vector<std::size_t> dims;     // C order
  DType dtype = DType::f32;
  std::string units = "pixel intensity";
  std::vector<std::string> dim_names, dim_units;
  std::vector<double> dim_steps;     // one per dim (dim vector [0, step])
  const void* data = nullptr;        // whole array, native byte order; or null and `fill`
  // Writes the array in bands of its first dimension: called with (first index, count, bytes).
  std::function<void(const std::function<void(std::size_t, std::size_t, const void*)>&)> fill;
  nlohmann::json attributes = nlohmann::json::object();  // extra attributes of the array group (numbers, strings)
};

struct EmdFileSpec {
  std::string root = "py4DSTEM_root";
  // Our calibration ({key: value}): scan_step_angstrom -> R_pixel_size in A; detector_inv_angstrom_per_pixel -> Q in
  // A^-1, else detector_mrad_per_pixel -> Q in mrad; beam_center_row/col_px -> qx0_mean / qy0_mean; every key also
  // kept under metadatabundle/quantem_calibration.
  nlohmann::json calibration = nlohmann::json::object();
  nlohmann::json provenance;         // written as a JSON string attribute of the root ("" none)
  std::vector<EmdArraySpec> arrays;
};

// Writes `path` atomically (a temporary beside it, renamed). IoError when it cannot.
void write_emd(const std::string& path, const EmdFileSpec& spec, const std::string& what = "EMD output");

// The Q / R pixel size and unit py4DSTEM's Calibration gets from our calibration (unit "pixels", size 1 when none).
struct EmdPixel {
  double size = 1;
  std::string units = "pixels";
};
EmdPixel emd_r_pixel(const nlohmann::json& calibration);
EmdPixel emd_q_pixel(const nlohmann::json& calibration);

}  // namespace qgpu::io
