#pragma once
#include "core/provenance.hpp"
#include "io/hdf5/load.hpp"

namespace qgpu::io {

// Provenance and metadata shared by both load backends.
inline Provenance load_provenance(const LoadPlan& p, const std::string& backend, const std::string& decoder) {
  Provenance pv;
  pv.operation = "io.load";
  pv.backend = backend;
  pv.input_dtype = dtype_name(p.info.dtype);
  pv.input_shape = p.info.shape.dims();
  pv.output_dtype = dtype_name(p.out_dtype);
  pv.output_shape = p.out_shape.dims();
  pv.representation = "dense";
  pv.parameters = {{"path", p.info.path},
                   {"dataset_path", p.info.dataset_path},
                   {"scan_region", {p.scan.row0, p.scan.col0, p.scan.rows, p.scan.cols}},
                   {"detector_region", {p.detector.row0, p.detector.col0, p.detector.rows, p.detector.cols}},
                   {"bin_scan", p.bin_scan},
                   {"bin_detector", p.bin_detector},
                   {"pixel_mask", p.pixel_mask},
                   {"bad_pixels_zeroed", p.zero_bad_pixels ? p.info.bad_pixels.size() : 0},
                   {"parts", p.info.parts.size()},
                   {"decoder", decoder}};
  return pv;
}

inline nlohmann::json load_metadata(const LoadPlan& p) {
  return {{"file", p.info.to_json()}, {"calibration", p.info.calibration}};
}

}  // namespace qgpu::io
