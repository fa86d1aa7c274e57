#include "dpc/pipeline.hpp"

#include <cmath>
#include <numbers>
#include <tuple>

#include "core/error.hpp"
#include "core/result_memory.hpp"
#include "core/stage_timing.hpp"
#include "dpc/com_backend.hpp"
#include "dpc/idpc_backend.hpp"

namespace qgpu::dpc {

namespace {

void step(const PipelineParams& p, const char* name) {
  if (p.idpc_options.rotation_deg)  // (checked at every pipeline's first step)
    throw InvalidArgument("dpc pipeline: idpc_options.rotation_deg does not apply (the pipeline rotates: set rotation)");
  if (p.on_step) p.on_step(name);
}

// The rotation: given, or calibrated from r.dpc (already centred). False when the calibration failed and the
// pipeline keeps going without a field (r.rotation_error says why).
bool decide_rotation(PipelineResult& r, const PipelineParams& p, const RotationCalibrator& calibrate) {
  if (p.rotation) {
    r.rotation = *p.rotation;
    return true;
  }
  if (!calibrate) throw InvalidArgument("the DPC pipeline needs a rotation or a way to calibrate it");
  step(p, "rotation");
  try {
    r.calibration = calibrate(r.dpc);
  } catch (const InvalidArgument& e) {
    if (!p.keep_going_without_rotation) throw;
    r.rotation_error = std::string("rotation calibration failed: ") + e.what();
    return false;
  }
  r.rotation = {r.calibration->angle_deg, r.calibration->transpose};
  return true;
}

// Rotation, field and iDPC of r.dpc (already centred).
void finish(PipelineResult& r, const PipelineParams& p, const RotationCalibrator& calibrate) {
  if (!decide_rotation(r, p, calibrate)) return;
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

namespace {

// The chain of a GPU-resident dataset whose CoM maps stayed on the GPU (maps, not yet downloaded): the field is
// made from them there and integrated (detail::integrate_cufft_com, its own stream) while the maps come down and
// the host makes the centred DPC and the field it returns (the same arithmetic: the same bits); the field never
// goes up. With a given rotation the reference is the GPU's mean in the host's order; a calibration needs the
// centred field on the host first. The same result as run_pipeline(com, ...) (tests/dpc/test_dpc_cuda.cpp).
PipelineResult device_chain(ComResult com, const detail::DeviceMaps& maps, const PipelineParams& params,
                            const RotationCalibrator& calibrate) {
  PipelineResult r;
  r.com = std::move(com);
  step(params, "dpc");
  const auto& given = params.reference;
  if (given && (!std::isfinite(given->first) || !std::isfinite(given->second)))
    throw InvalidArgument("centered_dpc: reference centre is not finite");
  detail::check_idpc_options(params.idpc_options);
  const detail::PaddedField geometry =
      detail::padded_geometry(r.com.com_row.rows, r.com.com_row.cols, params.idpc_options);
  detail::DeviceComField field{maps.row, maps.col};
  bool have_maps = false;
  if (!params.rotation) {  // the calibration reads the centred field on the host
    {
      const timing::Stage stage("transfer");
      detail::download_maps(maps, r.com);
    }
    have_maps = true;
    const std::pair<double, double> ref = given ? *given : detail::mean_com(r.com);
    r.dpc = detail::centered_dpc_at(r.com, ref, given.has_value());
    if (!decide_rotation(r, params, calibrate)) return r;
    std::tie(field.ref_row, field.ref_col) = ref;
  } else {
    r.rotation = *params.rotation;
    field.mean_reference = !given;
    if (given) std::tie(field.ref_row, field.ref_col) = *given;
  }
  if (!std::isfinite(r.rotation.angle_deg)) throw InvalidArgument("rotate_field: angle is not finite");
  step(params, "field");
  step(params, "idpc");
  const double t = r.rotation.angle_deg * (std::numbers::pi / 180.0);  // rotate_field's cos and sin
  field.cos = std::cos(t);
  field.sin = std::sin(t);
  field.transpose = r.rotation.transpose;
  Image<float> phi;
  phi.data = detail::integrate_cufft_com(field, geometry, [&](const detail::ReferenceGetter& reference) {
    if (have_maps) {  // calibrated: the centred DPC is here, the field made from it
      std::tie(r.field_row, r.field_col) = rotate_field(r.dpc, r.rotation.angle_deg, r.rotation.transpose);
      return;
    }
    // the maps come down while each arrived range is centred and rotated (one pass, download_maps' threads)
    for (Image<float>* im : {&r.com.com_row, &r.com.com_col}) im->data = result_vector<float>(maps.frames);
    r.dpc = detail::centered_dpc_at(r.com, reference(), given.has_value(), false);
    std::tie(r.field_row, r.field_col) =
        detail::rotate_field_unfilled(r.dpc, r.rotation.angle_deg, r.rotation.transpose);
    detail::download_maps(maps, r.com,
                          {&r.dpc, &r.field_row, &r.field_col, field.cos, field.sin, r.rotation.transpose});
  });
  phi.rows = geometry.rows;
  phi.cols = geometry.cols;
  phi.provenance = detail::idpc_provenance(r.field_row, r.field_col, Backend::cuda, geometry, params.idpc_options);
  phi.provenance.parameters["field_from"] = "the CoM maps on the GPU (not sent back up)";
  r.idpc = std::move(phi);
  return r;
}

}  // namespace

PipelineResult run_pipeline(const Dataset& ds, const PipelineParams& params) {
  const RotationCalibrator calibrate = [&ds](const DpcResult& d) { return calibrate_rotation(ds, d); };
  if (!params.idpc || ds.backend() != Backend::cuda) return run_pipeline(center_of_mass(ds), params, calibrate);
  detail::DeviceMaps maps;  // a GPU-resident dataset's CoM maps, kept there (not downloaded) for the integration
  ComResult com = detail::center_of_mass(ds, {}, &maps);
  if (!maps.row) return run_pipeline(std::move(com), params, calibrate);
  return device_chain(std::move(com), maps, params, calibrate);
}

}  // namespace qgpu::dpc
