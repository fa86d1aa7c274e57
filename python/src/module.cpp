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
void bind_parallax(pyb::module_& m);
void bind_cache(pyb::module_& m);
void bind_movie(pyb::module_& m);
void bind_live(pyb::module_& m);
}  // namespace qgpu::py

PYBIND11_MODULE(_qgpu, m) {
  namespace pyb = pybind11;
  m.doc() = "quantem-gpu compiled core";
  m.attr("__version__") = qgpu::kVersion;
  // Typed errors, each also a subclass of the matching Python builtin so that numpy-style code catches them:
  // Error(RuntimeError); IoError(Error, FileNotFoundError -> OSError); InvalidArgument and RegionError
  // (Error, ValueError); DeviceError(Error); OutOfMemory(DeviceError, MemoryError); the rest (Error).
  auto make = [&m](const char* name, std::initializer_list<pyb::handle> bases) {
    pyb::tuple b(bases.size());
    std::size_t i = 0;
    for (pyb::handle h : bases) b[i++] = pyb::reinterpret_borrow<pyb::object>(h);
    const std::string full = std::string("quantem.gpu.") + name;
    auto* cls = new pyb::object(pyb::reinterpret_steal<pyb::object>(PyErr_NewException(full.c_str(), b.ptr(), nullptr)));
    m.attr(name) = *cls;
    return cls;  // leaked on purpose: the translator below needs it for the life of the interpreter
  };
  static pyb::object *error, *io, *format, *region, *dtype, *backend, *invalid, *device, *oom;
  error = make("Error", {PyExc_RuntimeError});
  io = make("IoError", {*error, PyExc_FileNotFoundError});
  format = make("FormatError", {*error});
  region = make("RegionError", {*error, PyExc_ValueError});
  dtype = make("DTypeError", {*error});
  backend = make("BackendUnavailable", {*error});
  invalid = make("InvalidArgument", {*error, PyExc_ValueError});
  device = make("DeviceError", {*error});
  oom = make("OutOfMemory", {*device, PyExc_MemoryError});
  pyb::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const qgpu::IoError& e) {
      PyErr_SetString(io->ptr(), e.what());
    } catch (const qgpu::FormatError& e) {
      PyErr_SetString(format->ptr(), e.what());
    } catch (const qgpu::RegionError& e) {
      PyErr_SetString(region->ptr(), e.what());
    } catch (const qgpu::DTypeError& e) {
      PyErr_SetString(dtype->ptr(), e.what());
    } catch (const qgpu::BackendUnavailable& e) {
      PyErr_SetString(backend->ptr(), e.what());
    } catch (const qgpu::InvalidArgument& e) {
      PyErr_SetString(invalid->ptr(), e.what());
    } catch (const qgpu::OutOfMemory& e) {
      PyErr_SetString(oom->ptr(), e.what());
    } catch (const qgpu::DeviceError& e) {
      PyErr_SetString(device->ptr(), e.what());
    } catch (const qgpu::Error& e) {
      PyErr_SetString(error->ptr(), e.what());
    }
  });

  m.def("detect", [] {
    const qgpu::DeviceReport& r = qgpu::detect();
    pyb::dict d;
    d["cuda_available"] = r.cuda_available;
    d["device_count"] = r.device_count;
    d["name"] = r.name;
    d["reason"] = r.reason;
    return d;
  }, "Probe for a usable CUDA GPU");
  m.def("vulkan_device", [] {
    const qgpu::DeviceReport& r = qgpu::vulkan_report();
    pyb::dict d;
    d["available"] = r.vulkan_available;
    d["name"] = r.vulkan_name;
    d["type"] = r.vulkan_type;
    d["driver"] = r.vulkan_driver;
    d["api_version"] = r.vulkan_api;
    d["reason"] = r.vulkan_reason;
    return d;
  }, "The Vulkan adapter the vulkan backend uses, and its driver");
  m.def("resolve", [](const std::string& b) { return qgpu::backend_name(qgpu::resolve(b)); }, pyb::arg("backend"),
        "'cuda' | 'cpu' | 'vulkan' | 'auto' -> usable backend name, or BackendUnavailable");
  qgpu::py::bind_io(m);
  qgpu::py::bind_detector(m);
  qgpu::py::bind_dpc(m);
  qgpu::py::bind_display(m);
  qgpu::py::bind_ssb(m);
  qgpu::py::bind_parallax(m);
  qgpu::py::bind_cache(m);
  qgpu::py::bind_movie(m);
  qgpu::py::bind_live(m);
}
