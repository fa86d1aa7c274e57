#pragma once
// Product cache: the products a user opens first, computed from ONE loaded dataset and written to a versioned
// HDF5 file (layout: docs/design.md, "Product cache"), then read back without the raw data.
//
// Products (names; HDF5 paths in brackets):
//   sum_pattern [/patterns] uint64, mean_pattern [/patterns] float32, frame_totals [/scan] uint64,
//   bf, abf, adf, bf_r<R>, adf_<IN>_<OUT> [/virtual] uint64 (attribute "detector": geometry as JSON),
//   com_row, com_col, dpc_row, dpc_col (centred, detector axes), field_row, field_col (rotation-corrected),
//   idpc [/dpc] float32, rotation [/dpc] float64 (2, 360) RMS curl by [transpose][angle] with the calibration
//   as attributes. Every product has a "provenance" attribute (JSON string). /geometry holds the fitted disk.
// A product that could not be made is listed in the root attribute "unavailable" (JSON: name -> reason).
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/image.hpp"
#include "resident/dataset.hpp"
#include "workflow/scan_products.hpp"

namespace qgpu::cache {

inline constexpr int kFormatVersion = 1;
inline constexpr const char* kMarkerAttribute = "qgpu_cache";
inline constexpr const char* kMarker = "quantem-gpu product cache";

// A product (or the geometry) that the cache does not hold; the message names it and why.
struct ProductUnavailable : Error {
  using Error::Error;
};
// The source file changed since the cache was built (raised only when freshness is required).
struct StaleCache : Error {
  using Error::Error;
};

struct AdfRange {
  double inner = 0, outer = 0;
};

struct BuildOptions {
  std::vector<double> bf_radii;       // extra bright-field radii (pixels), besides the fitted disk radius
  std::vector<AdfRange> adf_ranges;   // extra annuli (pixels), besides the derived ABF/ADF
  std::string source_path;            // "" = the dataset's metadata file.path (where it was loaded from)
  std::function<void(const std::string&)> on_step;  // told the name of each product as it is computed
};

// Computes every product from `ds` (on its backend) and writes `out_path` (a temporary file renamed into place).
// Returns the names of the products written. IoError when the file cannot be written.
std::vector<std::string> build(const Dataset& ds, const std::string& out_path, const BuildOptions& options = {});
// The same through the workflow interface (an MPI run: row slabs gathered at rank 0, src/mpi).
std::vector<std::string> build(workflow::ScanProducts& src, const std::string& out_path,
                               const BuildOptions& options = {});

// True when `path` is an HDF5 file whose root carries the qgpu_cache marker attribute (never throws).
bool is_cache_file(const std::string& path);

struct Geometry {
  double disk_center_row = 0, disk_center_col = 0, disk_radius = 0;
  std::size_t scan_rows = 0, scan_cols = 0, det_rows = 0, det_cols = 0;
  nlohmann::json calibration = nlohmann::json::object();  // from the source file's metadata
  nlohmann::json provenance = nlohmann::json::object();
};

struct OpenOptions {
  bool require_fresh = false;  // StaleCache when the source is present and changed (else see Cache::stale())
};

class Cache {
 public:
  const std::string& path() const;
  int format_version() const;
  std::vector<std::string> products() const;  // names of the products held, sorted
  bool has(const std::string& name) const;
  std::string dtype(const std::string& name) const;  // "uint64" | "float32" | "float64"
  // The product as an image; ProductUnavailable naming it (and why, when known) if absent, DTypeError if the
  // stored dtype differs.
  Image<std::uint64_t> u64(const std::string& name) const;
  Image<float> f32(const std::string& name) const;
  Image<double> f64(const std::string& name) const;  // the rotation's curl scan
  nlohmann::json provenance(const std::string& name) const;
  nlohmann::json detector(const std::string& name) const;  // virtual detectors: kind, center, radii
  // The virtual product of that geometry (disk radius / annulus inner, outer; centre when given) or "". Values
  // match within `tolerance` pixels (0: equal up to rounding, 1e-9 relative).
  std::string find_disk(double radius, const double* center = nullptr, double tolerance = 0) const;
  std::string find_annulus(double inner, double outer, const double* center = nullptr, double tolerance = 0) const;
  const Geometry& geometry() const;   // ProductUnavailable("geometry") when absent
  nlohmann::json rotation() const;    // angle_deg, transpose, curl_rms, divergence_rms, provenance
  const nlohmann::json& source() const;         // recorded identity of the source file(s)
  const nlohmann::json& root_attributes() const;  // every root attribute (JSON strings parsed)
  bool source_present() const;
  const std::vector<std::string>& stale() const;  // what changed in the source; empty = fresh or absent

  struct State;
  explicit Cache(std::shared_ptr<const State> s) : s_(std::move(s)) {}

 private:
  std::shared_ptr<const State> s_;
};

// Opens a cache file: IoError if missing/unreadable, FormatError if not a cache or of an unknown format version.
Cache open(const std::string& path, const OpenOptions& options = {});

}  // namespace qgpu::cache
