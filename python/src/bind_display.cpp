#include <pybind11/stl.h>

#include "convert.hpp"
#include "display/display.hpp"
#include "display/figure.hpp"
#include "display/pattern.hpp"
#include "remote/encode.hpp"

namespace qgpu::py {

namespace {

display::DisplayOptions options(const std::string& colormap, const std::string& scale,
                                std::pair<double, double> percentiles, std::optional<double> vmin,
                                std::optional<double> vmax) {
  display::DisplayOptions o;
  o.colormap = colormap;
  o.scale = display::scale_from_name(scale);
  o.lower_percentile = percentiles.first;
  o.upper_percentile = percentiles.second;
  o.vmin = vmin;
  o.vmax = vmax;
  return o;
}

}  // namespace

void bind_display(pyb::module_& m) {
  using F = pyb::array_t<float, pyb::array::c_style | pyb::array::forcecast>;
  m.def("render", [](const F& img, const std::string& colormap, const std::string& scale,
                     std::pair<double, double> percentiles, std::optional<double> vmin, std::optional<double> vmax,
                     const std::string& backend, bool symmetric, std::size_t png_scale, bool annotate,
                     std::optional<double> pixel_size, const std::string& pixel_unit) {
    const Image<float> in = image_from_python(img, backend);
    display::DisplayOptions o = options(colormap, scale, percentiles, vmin, vmax);
    display::FigureOptions f;
    f.png_scale = png_scale;
    f.annotate = annotate;
    if (pixel_size) f.pixel_size = display::PixelSize{*pixel_size, pixel_unit};
    display::validate(f);  // before any work
    const display::Rgba r = nogil([&] {
      if (symmetric) o = display::symmetric_about_zero(in, o);
      return display::figure(display::render(in, o), f);
    });
    pyb::array_t<std::uint8_t> a({r.rows, r.cols, std::size_t(4)});
    std::copy(r.rgba.begin(), r.rgba.end(), a.mutable_data());
    return pyb::make_tuple(a, to_python(r.provenance.to_json()));
  }, pyb::arg("image"), pyb::arg("colormap") = "viridis", pyb::arg("scale") = "linear",
     pyb::arg("percentiles") = std::pair<double, double>{0.0, 100.0}, pyb::arg("vmin") = pyb::none(),
     pyb::arg("vmax") = pyb::none(), pyb::arg("backend"), pyb::arg("symmetric") = false, pyb::arg("png_scale") = 1,
     pyb::arg("annotate") = false, pyb::arg("pixel_size") = pyb::none(), pyb::arg("pixel_unit") = "angstrom");
  m.def("histogram", [](const F& img, const std::string& scale, std::pair<double, double> percentiles,
                        std::optional<double> vmin, std::optional<double> vmax, const std::string& backend) {
    const display::Histogram h =
        display::histogram(image_from_python(img, backend), options("gray", scale, percentiles, vmin, vmax));
    pyb::array_t<std::uint64_t> counts(256);
    std::copy(h.counts.begin(), h.counts.end(), counts.mutable_data());
    return pyb::make_tuple(counts, h.lo, h.hi, to_python(h.provenance.to_json()));
  }, pyb::arg("image"), pyb::arg("scale") = "linear", pyb::arg("percentiles") = std::pair<double, double>{0.0, 100.0},
     pyb::arg("vmin") = pyb::none(), pyb::arg("vmax") = pyb::none(), pyb::arg("backend"));
  m.def("fft_log_magnitude", [](const F& img, const std::string& backend) {
    const Image<float> in = image_from_python(img, backend);
    return image_to_python(nogil([&] { return display::fft_log_magnitude(in); }));
  }, pyb::arg("image"), pyb::arg("backend"));
  m.def("pattern_log", [](const F& img, const std::string& backend) {
    return image_to_python(display::pattern_log(image_from_python(img, backend)));
  }, pyb::arg("image"), pyb::arg("backend"));
  m.def("write_png", [](const PathArg& path, const pyb::array_t<std::uint8_t, pyb::array::c_style | pyb::array::forcecast>& rgba) {
    if (rgba.ndim() != 3 || rgba.shape(2) != 4) throw InvalidArgument("write_png expects an (rows, cols, 4) uint8 array");
    display::Rgba r;
    r.rows = rgba.shape(0);
    r.cols = rgba.shape(1);
    r.rgba.assign(rgba.data(), rgba.data() + rgba.size());
    display::write_png(path.string(), r);
  }, pyb::arg("path"), pyb::arg("rgba"));
  m.def("encode_png", [](const pyb::array_t<std::uint8_t, pyb::array::c_style | pyb::array::forcecast>& rgba) {
    if (rgba.ndim() != 3 || rgba.shape(2) != 4) throw InvalidArgument("encode_png expects an (rows, cols, 4) uint8 array");
    if (rgba.shape(0) == 0 || rgba.shape(1) == 0) throw InvalidArgument("encode_png: the image is empty");
    display::Rgba r;
    r.rows = rgba.shape(0);
    r.cols = rgba.shape(1);
    r.rgba.assign(rgba.data(), rgba.data() + rgba.size());
    return pyb::bytes(remote::png_bytes(r));
  }, pyb::arg("rgba"));
}

}  // namespace qgpu::py
