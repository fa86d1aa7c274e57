#pragma once
// The DPC workflow, written once: centre of mass -> centred DPC -> rotation (given, or calibrated: the CoM curl
// minimum with the parallax fallback, rotation.hpp) -> rotated field -> optional iDPC. The CLI (qgpu image), the
// service (/dpc, /idpc), the product cache (cache::compute_products) and the Python module (dpc.pipeline) all run
// this chain through run_pipeline; where the CoM or the calibration come from differs (a Dataset, an MPI run's
// gathered slabs, a served dataset's memo, a product cache's centred field), so those are passed in.
#include <functional>
#include <optional>
#include <string>
#include <utility>

#include "core/image.hpp"
#include "dpc/com.hpp"
#include "dpc/idpc.hpp"
#include "dpc/rotation.hpp"
#include "resident/dataset.hpp"

namespace qgpu::dpc {

struct Rotation {
  double angle_deg = 0;
  bool transpose = false;
};

struct PipelineParams {
  std::optional<std::pair<double, double>> reference;  // centring reference (row, col); empty: the mean CoM
  std::optional<Rotation> rotation;                    // given: used as is; empty: calibrated
  bool idpc = false;                                   // integrate the rotated field
  IdpcOptions idpc_options;
  // A calibration raising InvalidArgument (e.g. maps under 3x3): false = the error propagates; true = the result
  // keeps CoM and centred DPC, has no field / iDPC, and rotation_error says why (the product cache).
  bool keep_going_without_rotation = false;
  // Called before each step: "dpc", "rotation" (only when calibrating), "field", "idpc" (only when integrating).
  std::function<void(const std::string&)> on_step;
};

struct PipelineResult {
  ComResult com;                               // empty maps when started from a centred field
  DpcResult dpc;                               // CoM - reference
  std::optional<RotationResult> calibration;  // when calibrated: method ("com_curl" | "parallax"), confidence, ...
  Rotation rotation;                           // the rotation applied (given or calibrated)
  std::string rotation_error;                  // keep_going_without_rotation and the calibration failed
  Image<float> field_row, field_col;           // the centred DPC rotated into scan axes
  std::optional<Image<float>> idpc;            // params.idpc
  bool has_field() const { return rotation_error.empty(); }
};

// How the rotation is calibrated from the centred field (e.g. [&](const DpcResult& d) { return
// calibrate_rotation(ds, d); }, or an MPI run gathering the BF-disk box only when the parallax is needed).
using RotationCalibrator = std::function<RotationResult(const DpcResult&)>;

// From a computed CoM: centring, rotation, field, iDPC. `calibrate` is used only when params.rotation is empty
// (then it must be set, else InvalidArgument).
PipelineResult run_pipeline(ComResult com, const PipelineParams& params, const RotationCalibrator& calibrate);

// From a centred field at hand (a product cache's dpc_row / dpc_col): rotation, field, iDPC (params.reference unused).
PipelineResult run_pipeline(DpcResult dpc, const PipelineParams& params, const RotationCalibrator& calibrate = {});

// The whole chain on a dataset: center_of_mass(ds), calibrate_rotation(ds, dpc) (parallax fallback).
PipelineResult run_pipeline(const Dataset& ds, const PipelineParams& params);

}  // namespace qgpu::dpc
