#include <pybind11/functional.h>
#include <pybind11/stl.h>

#include <filesystem>

#include "convert.hpp"
#include "io/convert.hpp"
#include "io/hdf5/load.hpp"
#include "io/sample/sample.hpp"
#include "io/tiff/write_tiff.hpp"

namespace qgpu::py {

namespace {

// Straight into the new numpy array (cuda: from the GPU through pinned buffers on several threads), GIL released. A
// large array's memory is a freed one's of the same size when there is one (result_memory.hpp: its pages present; a
// fresh 302 MB region's first touch was 9 of its 15 ms on the H200, s14b) and goes back there when it is freed.
pyb::array read_array(const Dataset& ds, const pyb::object& scan, const pyb::object& det) {
  const Region sr = region_from_python(scan), dr = region_from_python(det);  // with the GIL held
  const Shape4D& sh = ds.shape();
  const Region s = resolve_region(sr, sh.scan_rows, sh.scan_cols, "scan");
  const Region d = resolve_region(dr, sh.det_rows, sh.det_cols, "detector");
  const std::vector<pyb::ssize_t> shape = {pyb::ssize_t(s.rows), pyb::ssize_t(s.cols), pyb::ssize_t(d.rows),
                                            pyb::ssize_t(d.cols)};
  return dispatch_stored_dtype(ds.dtype(), [&](auto z) -> pyb::array {
    using T = decltype(z);
    const std::size_t n = s.rows * s.cols * d.rows * d.cols;  // (resolve_region: inside the dataset, no overflow)
    std::vector<T> values;
    {
      pyb::gil_scoped_release release;
      values = result_vector<T>(n);
      ds.read_into(s, d, values.data(), n * sizeof(T));
    }
    return owning_array(std::move(values), shape);
  });
}

void set_scan_shape(const std::vector<std::size_t>& scan_shape, std::size_t& rows, std::size_t& cols) {
  if (scan_shape.empty()) return;
  if (scan_shape.size() != 2) throw InvalidArgument("scan_shape is (rows, cols)");
  rows = scan_shape[0];
  cols = scan_shape[1];
}

// format="raw": what the file cannot say about its frames.
io::RawLayout raw_layout(const std::string& dtype, const std::vector<std::size_t>& detector_shape,
                         std::uint64_t offset, std::uint64_t frame_header, std::uint64_t frame_footer) {
  if (!detector_shape.empty() && detector_shape.size() != 2)
    throw InvalidArgument("detector_shape is (rows, cols)");
  io::RawLayout r;
  r.dtype = dtype;
  if (detector_shape.size() == 2) r.det_rows = detector_shape[0], r.det_cols = detector_shape[1];
  r.offset = offset;
  r.frame_header = frame_header;
  r.frame_footer = frame_footer;
  return r;
}

// pixel_mask=: "keep" | "zero", a path (str or os.PathLike) of a mask file, or an array (integer or bool, nonzero =
// bad pixel) of the full stored frame.
void set_pixel_mask(const pyb::object& mask, io::LoadOptions& o) {
  if (pyb::isinstance<pyb::str>(mask)) {
    const std::string s = mask.cast<std::string>();
    if (s == "keep" || s == "zero") {
      o.pixel_mask = s;
      return;
    }
    std::error_code ec;
    if (!std::filesystem::exists(s, ec))  // a misspelt keyword as much as a missing file
      throw InvalidArgument("pixel_mask is \"keep\", \"zero\", a mask array or the path of a mask file; '" + s +
                            "' is none of these (no such file)");
    o.pixel_mask_file = s;  // plan_load reads it
    return;
  }
  if (pyb::hasattr(mask, "__fspath__")) {
    o.pixel_mask_file = pyb::module_::import("os").attr("fspath")(mask).cast<std::string>();
    return;
  }
  pyb::module_ np = pyb::module_::import("numpy");
  const pyb::array a = np.attr("asarray")(mask);
  const char kind = a.dtype().kind();
  if (kind != 'b' && kind != 'i' && kind != 'u')
    throw DTypeError("the pixel mask array holds " + pyb::str(a.dtype()).cast<std::string>() +
                     "; a pixel mask holds integers or booleans (nonzero = bad pixel), or is \"keep\", \"zero\" "
                     "or the path of a mask file");
  using Bytes = pyb::array_t<std::uint8_t, pyb::array::c_style | pyb::array::forcecast>;
  const Bytes nz = Bytes::ensure(np.attr("not_equal")(a, 0));
  io::GivenPixelMask g;
  g.source = "python array";
  for (pyb::ssize_t i = 0; i < a.ndim(); ++i) g.shape.push_back(std::uint64_t(a.shape(i)));
  g.bad.assign(nz.data(), nz.data() + nz.size());
  o.pixel_mask_given = std::move(g);
}

// The load options of load() and convert(), from their Python arguments.
io::LoadOptions load_options(const std::string& backend, const std::string& dataset,
                             const std::vector<std::size_t>& scan_shape, const pyb::object& scan_region,
                             const pyb::object& detector_region, std::size_t bin_scan, std::size_t bin_detector,
                             const pyb::object& pixel_mask, const std::string& decoder, unsigned read_threads,
                             bool direct_io, const pyb::object& progress, const std::string& representation,
                             double admission_fraction, const std::string& format, const std::string& dtype,
                             const std::vector<std::size_t>& detector_shape, std::uint64_t offset,
                             std::uint64_t frame_header, std::uint64_t frame_footer, bool flip_rows,
                             bool single_file) {
  io::LoadOptions o;
  o.flip_rows = flip_rows;
  o.single_file = single_file;
  o.backend = backend;
  o.dataset_path = dataset;
  set_scan_shape(scan_shape, o.scan_rows, o.scan_cols);
  o.format = format;
  o.raw = raw_layout(dtype, detector_shape, offset, frame_header, frame_footer);
  o.scan_region = region_from_python(scan_region);
  o.detector_region = region_from_python(detector_region);
  o.bin_scan = bin_scan;
  o.bin_detector = bin_detector;
  set_pixel_mask(pixel_mask, o);
  o.decoder = decoder;
  o.read_threads = read_threads;
  o.direct_io = direct_io;
  o.representation = representation;
  o.admission_fraction = admission_fraction;
  o.progress = progress_callback(progress);
  return o;
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
      .def("to_vulkan", &Dataset::to_vulkan)
      .def("to_encoded", &Dataset::to_encoded, pyb::arg("tile") = 512,
           "The same counts in the encoded representation (encoded-v1) on the same backend")
      .def("__repr__", [](const Dataset& d) {
        const Shape4D& s = d.shape();
        return "<quantem.gpu.Dataset " + std::to_string(s.scan_rows) + "x" + std::to_string(s.scan_cols) + "x" +
               std::to_string(s.det_rows) + "x" + std::to_string(s.det_cols) + " " + dtype_name(d.dtype()) + " on " +
               backend_name(d.backend()) + ">";
      });

  m.def("inspect", [](const PathArg& path, const std::string& dataset, std::vector<std::size_t> scan_shape,
                      const std::string& format, const std::string& dtype, std::vector<std::size_t> detector_shape,
                      std::uint64_t offset, std::uint64_t frame_header, std::uint64_t frame_footer, bool flip_rows,
                      bool single_file) {
    io::SourceOptions so;
    so.flip_rows = flip_rows;
    so.single_file = single_file;
    so.format = format;
    so.dataset_path = dataset;
    set_scan_shape(scan_shape, so.scan_rows, so.scan_cols);
    so.raw = raw_layout(dtype, detector_shape, offset, frame_header, frame_footer);
    // Never fails for want of a scan shape: "shape" is None, "scan_shape_needed" says what to give.
    so.need = io::ScanShapeNeed::optional;
    return to_python(io::inspect(path.string(), so).to_json());
  }, pyb::arg("path"), pyb::arg("dataset") = "", pyb::arg("scan_shape") = std::vector<std::size_t>{},
     pyb::arg("format") = "auto", pyb::arg("dtype") = "", pyb::arg("detector_shape") = std::vector<std::size_t>{},
     pyb::arg("offset") = 0, pyb::arg("frame_header") = 0, pyb::arg("frame_footer") = 0, pyb::arg("flip_rows") = false,
     pyb::arg("single_file") = false);

  m.def("formats", [] {
    pyb::list out;
    for (const io::FormatReader& r : io::formats()) {
      pyb::dict d;
      d["name"] = r.name;
      d["description"] = r.description;
      d["recognised_by_content"] = r.recognise != nullptr;
      out.append(d);
    }
    return out;
  }, "The file formats the source layer reads: name, description, whether files are recognised by their content.");

  m.def("discover", [](const PathArg& path) { return io::discover(path.string()); }, pyb::arg("path"));

  m.def("load", [](const PathArg& path, const std::string& backend, const std::string& dataset,
                   std::vector<std::size_t> scan_shape, const pyb::object& scan_region,
                   const pyb::object& detector_region, std::size_t bin_scan, std::size_t bin_detector,
                   const pyb::object& pixel_mask, const std::string& decoder, unsigned read_threads, bool direct_io,
                   const pyb::object& progress, const std::string& representation, double admission_fraction,
                   const std::string& format, const std::string& dtype, std::vector<std::size_t> detector_shape,
                   std::uint64_t offset, std::uint64_t frame_header, std::uint64_t frame_footer, bool flip_rows,
                   bool single_file, const std::string& radial_basis, const pyb::object& radial_basis_center,
                   const pyb::object& scan_binned) {
    io::LoadOptions o = load_options(backend, dataset, scan_shape, scan_region, detector_region, bin_scan,
                                     bin_detector, pixel_mask, decoder, read_threads, direct_io, progress,
                                     representation, admission_fraction, format, dtype, detector_shape, offset,
                                     frame_header, frame_footer, flip_rows, single_file);
    o.radial_basis = radial_basis;
    if (!radial_basis_center.is_none()) o.radial_basis_center = radial_basis_center.cast<std::pair<double, double>>();
    o.scan_binned = pyb::isinstance<pyb::int_>(scan_binned) && !pyb::isinstance<pyb::bool_>(scan_binned)
                        ? std::to_string(scan_binned.cast<long long>())
                        : scan_binned.cast<std::string>();
    pyb::gil_scoped_release release;
    return io::load(path.string(), o);
  }, pyb::arg("path"), pyb::arg("backend") = "auto", pyb::arg("dataset") = "",
     pyb::arg("scan_shape") = std::vector<std::size_t>{}, pyb::arg("scan_region") = pyb::none(),
     pyb::arg("detector_region") = pyb::none(), pyb::arg("bin_scan") = 1, pyb::arg("bin_detector") = 1,
     pyb::arg("pixel_mask") = pyb::str("keep"), pyb::arg("decoder") = "auto", pyb::arg("read_threads") = 0,
     pyb::arg("direct_io") = false, pyb::arg("progress") = pyb::none(), pyb::arg("representation") = "auto",
     pyb::arg("admission_fraction") = 0.8, pyb::arg("format") = "auto", pyb::arg("dtype") = "",
     pyb::arg("detector_shape") = std::vector<std::size_t>{}, pyb::arg("offset") = 0, pyb::arg("frame_header") = 0,
     pyb::arg("frame_footer") = 0, pyb::arg("flip_rows") = false, pyb::arg("single_file") = false,
     pyb::arg("radial_basis") = "auto", pyb::arg("radial_basis_center") = pyb::none(),
     pyb::arg("scan_binned") = pyb::str("auto"));

  // convert(path, out, ...): the load's options, then the output's (io/convert.hpp); returns a dict of what was written.
  m.def("convert", [](const PathArg& path, const PathArg& out, const std::string& to, unsigned threads,
                      std::size_t block, const std::string& backend, const std::string& dataset,
                      std::vector<std::size_t> scan_shape, const pyb::object& scan_region,
                      const pyb::object& detector_region, std::size_t bin_scan, std::size_t bin_detector,
                      const pyb::object& pixel_mask, const std::string& decoder, unsigned read_threads,
                      bool direct_io, const pyb::object& progress, const std::string& representation,
                      double admission_fraction, const std::string& format, const std::string& dtype,
                      std::vector<std::size_t> detector_shape, std::uint64_t offset, std::uint64_t frame_header,
                      std::uint64_t frame_footer, bool flip_rows, bool single_file) {
    io::LoadOptions o = load_options(backend, dataset, scan_shape, scan_region, detector_region, bin_scan,
                                     bin_detector, pixel_mask, decoder, read_threads, direct_io, pyb::none(),
                                     representation, admission_fraction, format, dtype, detector_shape, offset,
                                     frame_header, frame_footer, flip_rows, single_file);
    io::ConvertOptions co;
    co.to = to;
    co.threads = threads;
    co.block_elems = block;
    co.progress = progress_callback(progress);
    io::ConvertResult r;
    {
      pyb::gil_scoped_release release;
      r = io::convert(path.string(), out.string(), o, co);
    }
    pyb::dict d;
    d["path"] = r.path;
    d["sidecar"] = r.sidecar.empty() ? pyb::object(pyb::none()) : pyb::object(pyb::str(r.sidecar));
    d["shape"] = pyb::tuple(pyb::cast(r.shape.dims()));
    d["dtype"] = dtype_name(r.dtype);
    d["dense_bytes"] = r.dense_bytes;
    d["file_bytes"] = r.file_bytes;
    d["load_seconds"] = r.load_seconds;
    d["write_seconds"] = r.write_seconds;
    d["calibration"] = to_python(r.calibration);
    d["provenance"] = to_python(r.provenance);
    return d;
  }, pyb::arg("path"), pyb::arg("out"), pyb::arg("to") = "h5", pyb::arg("threads") = 0, pyb::arg("block") = 0,
     pyb::arg("backend") = "auto", pyb::arg("dataset") = "",
     pyb::arg("scan_shape") = std::vector<std::size_t>{}, pyb::arg("scan_region") = pyb::none(),
     pyb::arg("detector_region") = pyb::none(), pyb::arg("bin_scan") = 1, pyb::arg("bin_detector") = 1,
     pyb::arg("pixel_mask") = pyb::str("keep"), pyb::arg("decoder") = "auto", pyb::arg("read_threads") = 0,
     pyb::arg("direct_io") = false, pyb::arg("progress") = pyb::none(), pyb::arg("representation") = "auto",
     pyb::arg("admission_fraction") = 0.8, pyb::arg("format") = "auto", pyb::arg("dtype") = "",
     pyb::arg("detector_shape") = std::vector<std::size_t>{}, pyb::arg("offset") = 0, pyb::arg("frame_header") = 0,
     pyb::arg("frame_footer") = 0, pyb::arg("flip_rows") = false, pyb::arg("single_file") = false);

  m.def("write_tiff", [](const PathArg& path, const pyb::array_t<float, pyb::array::c_style | pyb::array::forcecast>& a,
                         double pixel_size, const std::string& unit) {
    const Image<float> img = image_from_python(a);
    io::write_tiff_f32(path.string(), img.rows, img.cols, img.data.data(), pixel_size, unit);
    return path.string();
  }, pyb::arg("path"), pyb::arg("image"), pyb::arg("pixel_size") = 0.0, pyb::arg("unit") = "");

  m.def("write_products_emd", [](const PathArg& path, const pyb::dict& products, const pyb::object& calibration) {
    std::vector<io::ProductImage> all;
    for (const auto& [k, v] : products) {
      io::ProductImage p;
      p.name = pyb::cast<std::string>(k);
      pyb::object arr = pyb::reinterpret_borrow<pyb::object>(v);
      if (pyb::isinstance<pyb::tuple>(v)) {
        const pyb::tuple t = pyb::reinterpret_borrow<pyb::tuple>(v);
        if (t.size() != 3) throw InvalidArgument("product '" + p.name + "' is an array or (array, pixel_size, unit)");
        arr = t[0];
        p.pixel_size = pyb::cast<double>(t[1]);
        p.unit = pyb::cast<std::string>(t[2]);
      }
      const Image<float> img = image_from_python(pyb::cast<pyb::array_t<float, pyb::array::c_style | pyb::array::forcecast>>(arr));
      p.rows = img.rows;
      p.cols = img.cols;
      p.values = img.data;
      all.push_back(std::move(p));
    }
    nlohmann::json cal = nlohmann::json::object();
    if (!calibration.is_none())
      for (const auto& [k, v] : pyb::cast<pyb::dict>(calibration)) cal[pyb::cast<std::string>(k)] = pyb::cast<double>(v);
    io::write_products_emd(path.string(), all, cal);
    return path.string();
  }, pyb::arg("path"), pyb::arg("products"), pyb::arg("calibration") = pyb::none());

  m.def("write_sample", [](const PathArg& path, std::vector<std::size_t> scan, std::vector<std::size_t> detector,
                           const std::string& dtype, double defocus, double dose, std::uint64_t seed, double energy,
                           double semiangle, std::size_t files, const std::string& byte_order,
                           std::vector<double> astigmatism, double rotation, bool transpose, bool defocus_hint) {
    if (astigmatism.size() != 2) throw InvalidArgument("astigmatism is (A1 angstrom, angle degrees)");
    if (scan.size() != 2 || detector.size() != 2) throw InvalidArgument("scan and detector are (rows, cols)");
    if (byte_order != "little" && byte_order != "big")
      throw InvalidArgument("byte_order is \"little\" or \"big\", not \"" + byte_order + "\"");
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
    s.big_endian = byte_order == "big";
    s.astigmatism_angstrom = astigmatism[0];
    s.astigmatism_angle_deg = astigmatism[1];
    s.rotation_deg = rotation;
    s.transpose = transpose;
    s.defocus_in_calibration = defocus_hint;
    pyb::gil_scoped_release release;
    if (files > 0) {
      sample::write_sample_acquisition(path.string(), s, files);  // master + <stem>_data_NNNNNN.h5 beside it
      return;
    }
    sample::write_sample(path.string(), s);
  },
  "Writes the built-in simulated sample. defocus is the Krivanek C1 in angstrom (chi = pi lambda C1 k^2, probe "
  "exp(-i chi)): positive = overfocus, C1 = -defocus of py4DSTEM/abTEM/Kirkland (docs/conventions.md). "
  "byte_order: the counts' byte order in the file (\"little\" or \"big\").",
     pyb::arg("path"), pyb::arg("scan") = std::vector<std::size_t>{32, 32},
     pyb::arg("detector") = std::vector<std::size_t>{64, 64}, pyb::arg("dtype") = "uint16", pyb::arg("defocus") = 0.0,
     pyb::arg("dose") = 0.0, pyb::arg("seed") = 1, pyb::arg("energy") = 300.0, pyb::arg("semiangle") = 20.0,
     pyb::arg("files") = 0, pyb::arg("byte_order") = "little", pyb::kw_only(),
     pyb::arg("astigmatism") = std::vector<double>{0.0, 0.0}, pyb::arg("rotation") = 0.0, pyb::arg("transpose") = false,
     pyb::arg("defocus_hint") = true);
}

}  // namespace qgpu::py
