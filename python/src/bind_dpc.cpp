#include <pybind11/stl.h>

#include "convert.hpp"
#include "dpc/com.hpp"
#include "dpc/idpc.hpp"
#include "dpc/pipeline.hpp"
#include "dpc/rotation.hpp"

namespace qgpu::py {

namespace {

dpc::DpcResult dpc_from(const pyb::array_t<float, pyb::array::c_style | pyb::array::forcecast>& r,
                        const pyb::array_t<float, pyb::array::c_style | pyb::array::forcecast>& c,
                        const std::string& backend) {
  dpc::DpcResult d;
  d.dpc_row = image_from_python(r, backend);
  d.dpc_col = image_from_python(c, backend);
  d.provenance.backend = backend;
  return d;
}

pyb::dict rotation_to_python(const dpc::RotationResult& rot) {
  pyb::dict d;
  d["angle_deg"] = rot.angle_deg;
  d["transpose"] = rot.transpose;
  d["curl_rms"] = rot.curl_rms;
  d["divergence_rms"] = rot.divergence_rms;
  d["confidence"] = rot.confidence;
  d["angle_sigma_deg"] = rot.angle_sigma_deg;  // NaN when the parallax decided
  d["determined"] = rot.determined;
  d["method"] = rot.method;
  d["warning"] = dpc::rotation_warning(rot);
  d["provenance"] = to_python(rot.provenance.to_json());
  return d;
}

dpc::IdpcPadding padding_of(const std::string& padding) {
  return padding == "mirror"     ? dpc::IdpcPadding::mirror
         : padding == "zeros"    ? dpc::IdpcPadding::zeros
         : padding == "periodic" ? dpc::IdpcPadding::periodic
                                 : throw InvalidArgument("padding must be 'mirror', 'zeros' or 'periodic'");
}

}  // namespace

void bind_dpc(pyb::module_& m) {
  m.def("center_of_mass", [](const Dataset& ds, const pyb::object& mask, std::size_t scan_bin) {
    dpc::ComOptions o;
    if (!mask.is_none()) {
      // Shape and dtype checked before any copy; values must be 0 or 1 (never wrapped by a cast to uint8).
      const pyb::array m = mask_argument(mask, ds.shape().det_rows, ds.shape().det_cols, "CoM mask");
      const auto a = pyb::array_t<double, pyb::array::c_style | pyb::array::forcecast>::ensure(m);
      o.mask.resize(std::size_t(a.size()));
      for (pyb::ssize_t i = 0; i < a.size(); ++i) {
        const double v = a.data()[i];
        if (v != 0.0 && v != 1.0)
          throw InvalidArgument("CoM mask value " + std::to_string(v) + " at pixel " + std::to_string(i) +
                                " is not 0 or 1 (a mask selects detector pixels)");
        o.mask[std::size_t(i)] = std::uint8_t(v);
      }
    }
    o.scan_bin = scan_bin;
    dpc::ComResult r = nogil([&] { return dpc::center_of_mass(ds, o); });
    pyb::dict prov = to_python(r.provenance.to_json());
    prov["empty_frames"] = r.empty_frames;
    return pyb::make_tuple(image_to_python(std::move(r.com_row))[0], image_to_python(std::move(r.com_col))[0], prov);
  }, pyb::arg("ds"), pyb::arg("mask") = pyb::none(), pyb::arg("scan_bin") = 1);
  m.def("centered_dpc", [](const Dataset& ds, const pyb::object& reference) {
    const dpc::ComResult com = nogil([&] { return dpc::center_of_mass(ds); });
    std::optional<std::pair<double, double>> ref;
    if (!reference.is_none()) ref = reference.cast<std::pair<double, double>>();
    dpc::DpcResult d = dpc::centered_dpc(com, ref);
    pyb::dict prov = to_python(d.provenance.to_json());
    return pyb::make_tuple(image_to_python(std::move(d.dpc_row))[0], image_to_python(std::move(d.dpc_col))[0], prov);
  }, pyb::arg("ds"), pyb::arg("reference") = pyb::none());
  m.def("calibrate_rotation", [](const pyb::array_t<float, pyb::array::c_style | pyb::array::forcecast>& r,
                                 const pyb::array_t<float, pyb::array::c_style | pyb::array::forcecast>& c,
                                 const std::string& backend, const Dataset* ds) {
    const dpc::DpcResult field = dpc_from(r, c, backend);
    dpc::RotationResult rot;
    {
      pyb::gil_scoped_release release;
      // With the dataset: the parallax shift field decides when the CoM curl minimum is not determined.
      rot = ds ? dpc::calibrate_rotation(*ds, field) : dpc::calibrate_rotation(field);
    }
    return rotation_to_python(rot);
  }, pyb::arg("dpc_row"), pyb::arg("dpc_col"), pyb::arg("backend"), pyb::arg("ds") = nullptr);
  // The whole chain as qgpu image and the service run it (dpc/pipeline.hpp).
  m.def("dpc_pipeline", [](const Dataset& ds, const pyb::object& reference, const pyb::object& rotation,
                           bool transpose, bool integrate, const std::string& padding) {
    dpc::PipelineParams pp;
    if (!reference.is_none()) pp.reference = reference.cast<std::pair<double, double>>();
    if (!rotation.is_none()) pp.rotation = dpc::Rotation{rotation.cast<double>(), transpose};
    pp.idpc = integrate;
    pp.idpc_options.padding = padding_of(padding);
    dpc::PipelineResult r = nogil([&] { return dpc::run_pipeline(ds, pp); });  // its maps moved out below
    pyb::dict d;
    pyb::dict com_prov = to_python(r.com.provenance.to_json());
    com_prov["empty_frames"] = r.com.empty_frames;
    d["com"] = pyb::make_tuple(image_to_python(std::move(r.com.com_row))[0], image_to_python(std::move(r.com.com_col))[0],
                               com_prov);
    d["dpc"] = pyb::make_tuple(image_to_python(std::move(r.dpc.dpc_row))[0], image_to_python(std::move(r.dpc.dpc_col))[0],
                               to_python(r.dpc.provenance.to_json()));
    d["field"] = pyb::make_tuple(image_to_python(std::move(r.field_row)), image_to_python(std::move(r.field_col)));
    d["angle_deg"] = r.rotation.angle_deg;
    d["transpose"] = r.rotation.transpose;
    d["calibration"] = r.calibration ? pyb::object(rotation_to_python(*r.calibration)) : pyb::none();
    d["idpc"] = r.idpc ? pyb::object(image_to_python(std::move(*r.idpc))) : pyb::none();
    return d;
  }, pyb::arg("ds"), pyb::arg("reference") = pyb::none(), pyb::arg("rotation") = pyb::none(),
     pyb::arg("transpose") = false, pyb::arg("idpc") = true, pyb::arg("padding") = "mirror");
  m.def("rotate_field", [](const pyb::array_t<float, pyb::array::c_style | pyb::array::forcecast>& r,
                           const pyb::array_t<float, pyb::array::c_style | pyb::array::forcecast>& c, double angle,
                           bool transpose, const std::string& backend) {
    auto [gr, gc] = dpc::rotate_field(dpc_from(r, c, backend), angle, transpose);
    return pyb::make_tuple(image_to_python(gr), image_to_python(gc));
  });
  m.def("idpc", [](const pyb::array_t<float, pyb::array::c_style | pyb::array::forcecast>& r,
                   const pyb::array_t<float, pyb::array::c_style | pyb::array::forcecast>& c, const std::string& backend,
                   const std::string& padding, double step_row, double step_col, std::optional<double> rotation,
                   bool transpose) {  // backend: the inputs' own
    dpc::IdpcOptions o;
    o.padding = padding_of(padding);
    o.step_row = step_row;
    o.step_col = step_col;
    o.rotation_deg = rotation;
    o.transpose = transpose;
    const Image<float> gr = image_from_python(r, backend), gc = image_from_python(c, backend);
    return image_to_python(nogil([&] { return dpc::idpc(gr, gc, o); }));
  }, pyb::arg("grad_row"), pyb::arg("grad_col"), pyb::arg("backend"), pyb::arg("padding") = "mirror",
     pyb::arg("step_row") = 1.0, pyb::arg("step_col") = 1.0, pyb::arg("rotation") = pyb::none(),
     pyb::arg("transpose") = false);
}

}  // namespace qgpu::py
