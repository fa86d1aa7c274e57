// _qgpu: compiled core of the Python package quantem.gpu (the package adds the pure-Python layer).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "convert.hpp"
#include "core/error.hpp"
#include "core/version.hpp"
#include "device/device.hpp"

namespace qgpu::py {
void bind_io(pyb::module_& m);
void bind_detector(pyb::module_& m);
void bind_dpc(pyb::module_& m);
void bind_display(pyb::module_& m);
void bind_ssb(pyb::module_& m);
void bind_cache(pyb::module_& m);
}  // namespace qgpu::py

PYBIND11_MODULE(_qgpu, m) {
  namespace pyb = pybind11;
  m.doc() = "quantem-gpu compiled core";
  m.attr("__version__") = qgpu::kVersion;
  // Base first: pybind11 tries the most recently registered translator first.
  auto error = pyb::register_exception<qgpu::Error>(m, "Error", PyExc_RuntimeError);
  pyb::register_exception<qgpu::IoError>(m, "IoError", error.ptr());
  pyb::register_exception<qgpu::FormatError>(m, "FormatError", error.ptr());
  pyb::register_exception<qgpu::RegionError>(m, "RegionError", error.ptr());
  pyb::register_exception<qgpu::DTypeError>(m, "DTypeError", error.ptr());
  pyb::register_exception<qgpu::BackendUnavailable>(m, "BackendUnavailable", error.ptr());
  pyb::register_exception<qgpu::InvalidArgument>(m, "InvalidArgument", error.ptr());

  m.def("detect", [] {
    const qgpu::DeviceReport& r = qgpu::detect();
    pyb::dict d;
    d["cuda_available"] = r.cuda_available;
    d["device_count"] = r.device_count;
    d["name"] = r.name;
    d["reason"] = r.reason;
    return d;
  }, "Probe for a usable CUDA GPU");
  m.def("resolve", [](const std::string& b) { return qgpu::backend_name(qgpu::resolve(b)); }, pyb::arg("backend"),
        "'cuda' | 'cpu' | 'auto' -> usable backend name, or BackendUnavailable");
  qgpu::py::bind_io(m);
  qgpu::py::bind_detector(m);
  qgpu::py::bind_dpc(m);
  qgpu::py::bind_display(m);
  qgpu::py::bind_ssb(m);
  qgpu::py::bind_cache(m);
}
