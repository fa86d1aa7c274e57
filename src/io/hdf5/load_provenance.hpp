#pragma once
#include "core/provenance.hpp"
#include "io/calibration.hpp"
#include "io/hdf5/load.hpp"
#include "resident/encoded/encoded_resident.hpp"

namespace qgpu::io {

// Provenance and metadata shared by both load backends.
inline Provenance load_provenance(const LoadPlan& p, const std::string& backend, const std::string& decoder) {
  Provenance pv;
  pv.operation = "io.load";
  pv.backend = backend;
  pv.input_dtype = dtype_name(p.info.stored_dtype());  // as stored (float64 files load as float32)
  pv.input_shape = p.info.shape.dims();
  pv.output_dtype = dtype_name(p.out_dtype);
  pv.output_shape = p.out_shape.dims();
  pv.representation = p.representation;  // resident_bytes: the dense size here; encoded loads set what they hold
  pv.dense_bytes = p.out_shape.nbytes(dtype_size(p.out_dtype));
  pv.resident_bytes = pv.dense_bytes;
  pv.parameters = {{"path", p.info.path},
                   {"format", p.info.reader},
                   {"codec", p.info.codec.name()},
                   {"dataset_path", p.info.dataset_path},
                   {"byte_order", p.info.byte_order},  // as stored; the decoded counts are in the host's order
                   {"stored_dtype", dtype_name(p.info.stored_dtype())},
                   {"scan_region", {p.scan.row0, p.scan.col0, p.scan.rows, p.scan.cols}},
                   {"detector_region", {p.detector.row0, p.detector.col0, p.detector.rows, p.detector.cols}},
                   {"bin_scan", p.bin_scan},
                   {"bin_detector", p.bin_detector},
                   {"pixel_mask", p.pixel_mask},
                   {"pixel_mask_source", p.pixel_mask_source},
                   {"bad_pixels_zeroed", p.zero_bad_pixels ? p.bad_pixels.size() : 0},
                   {"parts", p.info.parts.size()},
                   {"scan_shape", {{"value", {p.info.shape.scan_rows, p.info.shape.scan_cols}},
                                   {"source", p.info.scan_shape_source}}},
                   {"calibration", p.info.calibration_detail},
                   {"decoder", decoder},
                   {"admission", p.admission}};
  return pv;
}

// "calibration": the values for the pixels of this load (a binned or cropped load's: io::calibration_of_load);
// "file_calibration": the file's own; "calibration_detail": the file's values with unit and source.
inline nlohmann::json load_metadata(const LoadPlan& p) {
  return {{"file", p.info.to_json()},
          {"calibration", calibration_of_load(p.info.calibration, p.detector, p.bin_scan, p.bin_detector)},
          {"file_calibration", p.info.calibration},
          {"calibration_detail", p.info.calibration_detail}};
}

// Float data: the NaN/inf values zeroed at load (io/source/nonfinite.hpp), counted in provenance and metadata, with a
// warning in the metadata's file warnings when there were any.
inline void note_nonfinite(Provenance& pv, nlohmann::json& md, std::uint64_t n) {
  pv.parameters["nonfinite_values"] = n;
  md["nonfinite_values"] = n;
  if (n)
    md["file"]["warnings"].push_back(std::to_string(n) + " NaN/inf values in the file were set to 0 (counted in "
                                     "nonfinite_values)");
}

// The loaded encoded dataset, its provenance stating the bytes it holds.
inline Dataset encoded_dataset(const LoadPlan& p, std::shared_ptr<EncodedResident> enc, Provenance pv) {
  pv.resident_bytes = enc->resident_bytes();
  pv.dense_bytes = enc->dense_bytes();
  pv.parameters["storage_schema"] = enc->storage_schema();
  pv.parameters["encoded_policy"] = encoded::policy_name(enc->layout().policy);
  return Dataset::from_encoded(std::move(enc), load_metadata(p), std::move(pv));
}

}  // namespace qgpu::io
