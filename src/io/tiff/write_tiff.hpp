#pragma once
// Exports of 2D products: a baseline TIFF of 32-bit floats (one strip, little-endian, SampleFormat 3) that ImageJ /
// Fiji open with their pixel size (XResolution / YResolution = pixels per unit, the unit in the ImageJ description
// "ImageJ=1.11a\nunit=...\n", as ImageJ writes it), and an EMD 1.0 file of several products with their calibration.
#include <cstddef>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace qgpu::io {

// pixel_size <= 0 or unit "": no resolution written (ImageJ: pixels). IoError when the file cannot be written.
void write_tiff_f32(const std::string& path, std::size_t rows, std::size_t cols, const float* values,
                    double pixel_size = 0, const std::string& unit = "");

struct ProductImage {
  std::string name;            // group name in the EMD file
  std::size_t rows = 0, cols = 0;
  std::vector<float> values;   // row-major
  double pixel_size = 0;       // per pixel in `unit` (0: unknown)
  std::string unit;            // "A", "mrad", ... ("" unknown)
  nlohmann::json provenance;   // written as the array's quantem_provenance attribute (null: none)
};

// All products in one EMD 1.0 file (root "quantem_products": each an Array with data, dim0 / dim1 [0, pixel size]
// and units; the root's Calibration from `calibration`, our {key: value}).
void write_products_emd(const std::string& path, const std::vector<ProductImage>& products,
                        const nlohmann::json& calibration = nlohmann::json::object());

}  // namespace qgpu::io
