#pragma once
// The cache's products computed from one dataset through the public query API (detector::, dpc::).
#include <map>
#include <string>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "cache/cache.hpp"
#include "workflow/scan_products.hpp"

namespace qgpu::cache {

struct Product {
  std::string name, group;  // dataset /group/name
  std::variant<Image<std::uint64_t>, Image<float>, Image<double>> image;
  nlohmann::json provenance;
  nlohmann::json attributes = nlohmann::json::object();  // extra attributes: numbers as float64, else JSON strings
};

struct ProductSet {
  std::vector<Product> products;
  Geometry geometry;
  std::map<std::string, std::string> unavailable;  // product name -> why it was not made
};

// Detector radii derived from the fitted disk radius R and the distance from the centre to the nearest detector
// edge: ABF 0.5R..R, ADF 1.2R..min(3R, edge) (left out, with the reason, when that is empty).
struct DerivedRadii {
  double bf = 0, abf_inner = 0, abf_outer = 0, adf_inner = 0, adf_outer = 0;
  bool adf_possible = false;
};
DerivedRadii derive_radii(double radius, double center_row, double center_col, std::size_t det_rows,
                          std::size_t det_cols);

// Names of the extra detectors: bf_r<R>, adf_<IN>_<OUT> (numbers as %g with '.' kept; '-' for a minus sign).
std::string bf_name(double radius);
std::string adf_name(double inner, double outer);

// InvalidArgument for a radius <= 0 or not finite, an annulus without 0 <= inner < outer, or one given twice.
void check_extra_detectors(const BuildOptions& options);

// The products through the workflow interface: one process (a Dataset) or an MPI run (row slabs, src/mpi).
ProductSet compute_products(workflow::ScanProducts& src, const BuildOptions& options);

}  // namespace qgpu::cache
