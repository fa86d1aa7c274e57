#include "dpc/pipeline.hpp"

#include <tuple>

#include "core/error.hpp"

namespace qgpu::dpc {

namespace {

void step(const PipelineParams& p, const char* name) {
  if (p.on_step) p.on_step(name);
}

// Rotation, field and iDPC of r.dpc (already centred).
void finish(PipelineResult& r, const PipelineParams& p, const RotationCalibrator& calibrate) {
  if (p.rotation) {
    r.rotation = *p.rotation;
  } else {
    if (!calibrate) throw InvalidArgument("the DPC pipeline needs a rotation or a way to calibrate it");
    step(p, "rotation");
    try {
      r.calibration = calibrate(r.dpc);
    } catch (const InvalidArgument& e) {
      if (!p.keep_going_without_rotation) throw;
      r.rotation_error = std::string("rotation calibration failed: ") + e.what();
      return;
    }
    r.rotation = {r.calibration->angle_deg, r.calibration->transpose};
  }
  step(p, "field");
  std::tie(r.field_row, r.field_col) = rotate_field(r.dpc, r.rotation.angle_deg, r.rotation.transpose);
  if (!p.idpc) return;
  step(p, "idpc");
  r.idpc = idpc(r.field_row, r.field_col, p.idpc_options);
}

}  // namespace

PipelineResult run_pipeline(ComResult com, const PipelineParams& params, const RotationCalibrator& calibrate) {
  PipelineResult r;
  r.com = std::move(com);
  step(params, "dpc");
  r.dpc = centered_dpc(r.com, params.reference);
  finish(r, params, calibrate);
  return r;
}

PipelineResult run_pipeline(DpcResult dpc, const PipelineParams& params, const RotationCalibrator& calibrate) {
  PipelineResult r;
  r.dpc = std::move(dpc);
  finish(r, params, calibrate);
  return r;
}

PipelineResult run_pipeline(const Dataset& ds, const PipelineParams& params) {
  return run_pipeline(center_of_mass(ds), params, [&ds](const DpcResult& d) { return calibrate_rotation(ds, d); });
}

}  // namespace qgpu::dpc
