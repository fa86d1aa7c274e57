#pragma once
// What the image and cache workflows ask of a loaded scan: the products that split over scan rows (sum pattern,
// masked sums, CoM) and what is derived from them (mean pattern, BF disk fit, default ADF radii). One process
// answers from its Dataset (DatasetProducts); an MPI run (src/mpi) answers from per-rank row slabs gathered at
// rank 0. The workflows (cli image, cache::compute_products) are written once against this interface.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "core/image.hpp"
#include "detector/mask.hpp"
#include "detector/virtual_detector.hpp"
#include "dpc/com.hpp"
#include "dpc/pipeline.hpp"
#include "dpc/rotation.hpp"
#include "resident/dataset.hpp"

namespace qgpu::workflow {

// A dataset of `frames` (the whole scan, cropped to `detector_region` of `from`) with `from`'s metadata, on
// `from`'s backend (host frames copied to its GPU for cuda).
// The detector box a whole-field method of the BF-disk pixels needs (SSB, parallax): the disk of `radius` pixels
// around the fitted centre with a margin (radius x 1.01 + 2 px), clamped to the detector, its origin on a multiple
// of `align` (the detector binning of the method, so its binned blocks are those of the whole detector).
Region bf_disk_box(const detector::DiskFit& fit, double radius, std::size_t det_rows, std::size_t det_cols,
                   std::size_t align = 1);

// `note`: more provenance parameters (an MPI run's split).
Dataset crop_like(const Dataset& from, HostArray4D frames, const Region& detector_region,
                  const nlohmann::json& note = nlohmann::json::object());

class ScanProducts {
 public:
  virtual ~ScanProducts() = default;

  virtual const Shape4D& shape() const = 0;  // the whole scan as loaded
  virtual Backend backend() const = 0;
  virtual const nlohmann::json& metadata() const = 0;  // the loaded dataset's metadata (file, calibration)
  virtual nlohmann::json describe() const = 0;         // describe(Dataset) of the whole scan
  virtual std::string summary() const = 0;             // one log line: shape, dtype, backend, residency

  // Products that split over scan rows; every parameter explicit (defaults resolved by the helpers below).
  virtual SumImage sum_pattern() = 0;
  virtual SumImage virtual_image(const detector::Mask& mask, const std::string& operation) = 0;
  virtual SumImage bf(double radius, detector::Center center) = 0;
  virtual SumImage adf(double inner, double outer, detector::Center center) = 0;
  virtual dpc::ComResult center_of_mass() = 0;
  // Every frame of the scan cropped to a detector region (e.g. the BF disk, for SSB), as a dataset on this
  // backend: the input of a whole-field method. An MPI run gathers it at rank 0.
  virtual Dataset detector_crop(const Region& detector_region) = 0;
  // Rotation calibration of the centred CoM field: the CoM curl, or the parallax shift field of the BF-disk pixels
  // when that is not clear (confidence < dpc::kComTrusted, dpc::calibrate_rotation(ds, dpc)). An MPI run gathers the
  // BF disk box at rank 0 only when the parallax is needed.
  virtual dpc::RotationResult calibrate_rotation(const dpc::DpcResult& dpc) = 0;

  // Derived, one implementation for every source (the sum pattern is computed once).
  const SumImage& summed();
  Image<float> mean_pattern();
  detector::DiskFit fit_bf_disk();  // the fit alone
  // The user's BF disk centre and/or radius (qgpu image --center/--radius): they replace the fit's in disk() and
  // every default below (BF, ADF radii, centres, the DPC rotation's parallax fallback).
  void set_disk(std::optional<detector::Center> center, std::optional<double> radius);
  // The BF disk used: the given values, the fit's for the rest (fitted only when something is not given).
  detector::DiskFit disk();
  detector::AnnulusRadii default_adf_radii(std::optional<detector::Center> center = {});
  // bf with the disk's radius and/or centre where not given.
  SumImage bf_with_defaults(std::optional<double> radius, std::optional<detector::Center> center);
  detector::Center center_or_fit(std::optional<detector::Center> center);
  // The DPC workflow (dpc/pipeline.hpp) from this source's CoM (center_of_mass(), passed in so that callers can
  // use it first) with this source's rotation calibration.
  dpc::PipelineResult dpc_pipeline(dpc::ComResult com, const dpc::PipelineParams& params);

 private:
  std::optional<SumImage> sum_;
  std::optional<detector::DiskFit> fit_;

 protected:
  std::optional<detector::Center> given_center_;
  std::optional<double> given_radius_;
};

// One process: the products of a resident Dataset (detector::, dpc:: on its backend).
class DatasetProducts : public ScanProducts {
 public:
  explicit DatasetProducts(Dataset ds) : ds_(std::move(ds)) {}
  const Dataset& dataset() const { return ds_; }
  const Shape4D& shape() const override { return ds_.shape(); }
  Backend backend() const override { return ds_.backend(); }
  const nlohmann::json& metadata() const override { return ds_.metadata(); }
  nlohmann::json describe() const override { return qgpu::describe(ds_); }
  std::string summary() const override;
  SumImage sum_pattern() override { return detector::sum_pattern(ds_); }
  SumImage virtual_image(const detector::Mask& mask, const std::string& operation) override;
  SumImage bf(double radius, detector::Center center) override { return detector::bf(ds_, radius, center); }
  SumImage adf(double inner, double outer, detector::Center center) override {
    return detector::adf(ds_, inner, outer, center);
  }
  dpc::ComResult center_of_mass() override { return dpc::center_of_mass(ds_); }
  Dataset detector_crop(const Region& detector_region) override;
  dpc::RotationResult calibrate_rotation(const dpc::DpcResult& dpc) override {
    return dpc::calibrate_rotation(ds_, dpc, given_center_, given_radius_);
  }

 private:
  Dataset ds_;
};

}  // namespace qgpu::workflow
