#include <pybind11/functional.h>
#include <pybind11/stl.h>

#include "convert.hpp"
#include "io/hdf5/load.hpp"
#include "io/sample/sample.hpp"

namespace qgpu::py {

namespace {

pyb::array read_array(const Dataset& ds, const pyb::object& scan, const pyb::object& det) {
  const Region sr = region_from_python(scan), dr = region_from_python(det);  // with the GIL held
  HostArray4D h;
  {
    pyb::gil_scoped_release release;
    h = ds.read(sr, dr);
  }
  const std::vector<pyb::ssize_t> shape = {pyb::ssize_t(h.shape.scan_rows), pyb::ssize_t(h.shape.scan_cols),
                                            pyb::ssize_t(h.shape.det_rows), pyb::ssize_t(h.shape.det_cols)};
  return dispatch_count_dtype(h.dtype, [&](auto z) -> pyb::array {
    using T = decltype(z);
    pyb::array_t<T> a(shape);
    std::memcpy(a.mutable_data(), h.bytes.data(), h.bytes.size());
    return a;
  });
}

}  // namespace

void bind_io(pyb::module_& m) {
  pyb::class_<Dataset>(m, "Dataset", "A loaded 4D-STEM dataset (GPU-resident for backend cuda)")
      .def_property_readonly("shape", [](const Dataset& d) { return pyb::tuple(pyb::cast(d.shape().dims())); })
      .def_property_readonly("dtype", [](const Dataset& d) { return dtype_name(d.dtype()); })
      .def_property_readonly("backend", [](const Dataset& d) { return backend_name(d.backend()); })
      .def_property_readonly("representation", &Dataset::representation)
      .def_property_readonly("residency", &Dataset::residency)
      .def_property_readonly("storage_schema", &Dataset::storage_schema)
      .def_property_readonly("nbytes", &Dataset::nbytes)
      .def_property_readonly("resident_bytes", &Dataset::resident_bytes)
      .def_property_readonly("dense_bytes", &Dataset::dense_bytes)
      .def_property_readonly("metadata", [](const Dataset& d) { return to_python(d.metadata()); })
      .def_property_readonly("provenance", [](const Dataset& d) { return to_python(d.provenance().to_json()); })
      .def("describe", [](const Dataset& d) { return to_python(describe(d)); })
      .def("read", &read_array, pyb::arg("scan_region") = pyb::none(), pyb::arg("detector_region") = pyb::none(),
           "Copy a (row0, col0, rows, cols) scan x detector rectangle to a numpy array (native dtype)")
      .def("to_host", &Dataset::to_host)
      .def("to_device", &Dataset::to_device)
      .def("to_encoded", &Dataset::to_encoded, pyb::arg("tile") = 512,
           "The same counts in the encoded representation (encoded-v1) on the same backend")
      .def("__repr__", [](const Dataset& d) {
        const Shape4D& s = d.shape();
        return "<quantem.gpu.Dataset " + std::to_string(s.scan_rows) + "x" + std::to_string(s.scan_cols) + "x" +
               std::to_string(s.det_rows) + "x" + std::to_string(s.det_cols) + " " + dtype_name(d.dtype()) + " on " +
               backend_name(d.backend()) + ">";
      });

  m.def("inspect", [](const std::string& path, const std::string& dataset, std::vector<std::size_t> scan_shape) {
    if (!scan_shape.empty() && scan_shape.size() != 2) throw InvalidArgument("scan_shape is (rows, cols)");
    // Never fails for want of a scan shape: "shape" is None, "scan_shape_needed" says what to give.
    const auto fi = io::inspect(path, dataset, scan_shape.empty() ? 0 : scan_shape[0],
                                scan_shape.empty() ? 0 : scan_shape[1], io::ScanShapeNeed::optional);
    return to_python(fi.to_json());
  }, pyb::arg("path"), pyb::arg("dataset") = "", pyb::arg("scan_shape") = std::vector<std::size_t>{});

  m.def("discover", &io::discover, pyb::arg("path"));

  m.def("load", [](const std::string& path, const std::string& backend, const std::string& dataset,
                   std::vector<std::size_t> scan_shape, const pyb::object& scan_region,
                   const pyb::object& detector_region, std::size_t bin_scan, std::size_t bin_detector,
                   const std::string& pixel_mask, const std::string& decoder, unsigned read_threads, bool direct_io,
                   const pyb::object& progress, const std::string& representation, double admission_fraction) {
    io::LoadOptions o;
    o.backend = backend;
    o.dataset_path = dataset;
    if (!scan_shape.empty()) {
      if (scan_shape.size() != 2) throw InvalidArgument("scan_shape is (rows, cols)");
      o.scan_rows = scan_shape[0];
      o.scan_cols = scan_shape[1];
    }
    o.scan_region = region_from_python(scan_region);
    o.detector_region = region_from_python(detector_region);
    o.bin_scan = bin_scan;
    o.bin_detector = bin_detector;
    o.pixel_mask = pixel_mask;
    o.decoder = decoder;
    o.read_threads = read_threads;
    o.direct_io = direct_io;
    o.representation = representation;
    o.admission_fraction = admission_fraction;
    if (!progress.is_none()) {
      pyb::function cb = progress;
      o.progress = [cb](double f) {
        pyb::gil_scoped_acquire acquire;
        cb(f);
      };
    }
    pyb::gil_scoped_release release;
    return io::load(path, o);
  }, pyb::arg("path"), pyb::arg("backend") = "auto", pyb::arg("dataset") = "",
     pyb::arg("scan_shape") = std::vector<std::size_t>{}, pyb::arg("scan_region") = pyb::none(),
     pyb::arg("detector_region") = pyb::none(), pyb::arg("bin_scan") = 1, pyb::arg("bin_detector") = 1,
     pyb::arg("pixel_mask") = "keep", pyb::arg("decoder") = "auto", pyb::arg("read_threads") = 0,
     pyb::arg("direct_io") = false, pyb::arg("progress") = pyb::none(), pyb::arg("representation") = "auto",
     pyb::arg("admission_fraction") = 0.8);

  m.def("write_sample", [](const std::string& path, std::vector<std::size_t> scan, std::vector<std::size_t> detector,
                           const std::string& dtype, double defocus, double dose, std::uint64_t seed, double energy,
                           double semiangle, std::size_t files) {
    if (scan.size() != 2 || detector.size() != 2) throw InvalidArgument("scan and detector are (rows, cols)");
    sample::SampleSpec s;
    s.scan_rows = scan[0];
    s.scan_cols = scan[1];
    s.det_rows = detector[0];
    s.det_cols = detector[1];
    s.dtype = dtype_from_name(dtype);
    s.defocus_angstrom = defocus;
    s.dose_per_frame = dose;
    s.seed = seed;
    s.energy_kev = energy;
    s.semiangle_mrad = semiangle;
    pyb::gil_scoped_release release;
    if (files > 0) {
      sample::write_sample_acquisition(path, s, files);  // master + <stem>_data_NNNNNN.h5 beside it
      return;
    }
    sample::write_sample(path, s);
  },
  "Writes the built-in simulated sample. defocus is the Krivanek C1 in angstrom (chi = pi lambda C1 k^2, probe "
  "exp(-i chi)): positive = overfocus, C1 = -defocus of py4DSTEM/abTEM/Kirkland (docs/conventions.md).",
     pyb::arg("path"), pyb::arg("scan") = std::vector<std::size_t>{32, 32},
     pyb::arg("detector") = std::vector<std::size_t>{64, 64}, pyb::arg("dtype") = "uint16", pyb::arg("defocus") = 0.0,
     pyb::arg("dose") = 0.0, pyb::arg("seed") = 1, pyb::arg("energy") = 300.0, pyb::arg("semiangle") = 20.0,
     pyb::arg("files") = 0);
}

}  // namespace qgpu::py
