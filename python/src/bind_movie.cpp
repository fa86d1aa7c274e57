#include <pybind11/stl.h>

#include "convert.hpp"
#include "movie/movie.hpp"

namespace qgpu::py {

namespace {

// A movie spec from the Python keyword arguments (python/quantem/gpu/movie.py documents them).
movie::MovieSpec spec_of(const std::string& sweep, const pyb::dict& kw) {
  auto has = [&](const char* k) { return kw.contains(k) && !kw[k].is_none(); };
  movie::MovieSpec s;
  s.sequence = movie::sequence_from_name(sweep);
  if (has("range")) {
    const auto r = kw["range"].cast<std::pair<double, double>>();
    s.start = r.first;
    s.stop = r.second;
  }
  if (has("frames")) {
    const long long n = kw["frames"].cast<long long>();
    if (n < 0) throw InvalidArgument("movie frames must be 1..100000 (got " + std::to_string(n) + ")");
    s.frames = static_cast<std::size_t>(n);
  }
  if (has("row")) s.row = kw["row"].cast<std::size_t>();
  if (has("line")) {
    const auto l = kw["line"].cast<std::vector<std::size_t>>();
    if (l.size() != 4) throw InvalidArgument("movie line needs (r0, c0, r1, c1)");
    std::copy_n(l.begin(), 4, s.line);
  }
  if (has("adf_width")) s.adf_width = kw["adf_width"].cast<double>();
  if (has("adf_outer")) s.adf_outer = kw["adf_outer"].cast<double>();
  if (has("center")) s.center = kw["center"].cast<std::pair<double, double>>();
  if (has("colormap")) s.look.colormap = kw["colormap"].cast<std::string>();
  const bool path = s.sequence == movie::Sequence::path_row || s.sequence == movie::Sequence::path_line;
  s.look.scale = display::scale_from_name(has("scale") ? kw["scale"].cast<std::string>() : path ? "log" : "linear");
  s.look.lower_percentile = 0.5;
  s.look.upper_percentile = 99.5;
  if (has("percentiles")) {
    const auto p = kw["percentiles"].cast<std::pair<double, double>>();
    s.look.lower_percentile = p.first;
    s.look.upper_percentile = p.second;
  }
  if (has("size")) {
    const auto wh = kw["size"].cast<std::pair<std::size_t, std::size_t>>();
    if (wh.first == 0 || wh.second == 0) throw InvalidArgument("movie size needs positive width and height");
    s.width = wh.first;
    s.height = wh.second;
  }
  if (has("resize")) s.resize = movie::resize_from_name(kw["resize"].cast<std::string>());
  if (has("label")) s.label = kw["label"].cast<bool>();
  if (has("fps")) s.fps = kw["fps"].cast<unsigned>();
  if (has("encoder")) s.encoder = kw["encoder"].cast<std::string>();
  return s;
}

}  // namespace

void bind_movie(pyb::module_& m) {
  m.def("movie_render", [](const Dataset& ds, const PathArg& path, const std::string& sweep, const pyb::dict& kw) {
    const movie::MovieSpec s = spec_of(sweep, kw);
    movie::MovieResult r;
    {
      pyb::gil_scoped_release release;
      r = movie::render(ds, path.string(), s);
    }
    pyb::dict d;
    d["path"] = r.path;
    d["frames"] = r.frames;
    d["width"] = r.width;
    d["height"] = r.height;
    d["encoder"] = r.encoder;
    d["render_seconds"] = r.render_seconds;
    d["encode_seconds"] = r.encode_seconds;
    d["provenance"] = to_python(r.provenance.to_json());
    return d;
  }, pyb::arg("ds"), pyb::arg("path"), pyb::arg("sweep"), pyb::arg("options"));
  m.def("movie_nvenc_available", &movie::nvenc_available);
}

}  // namespace qgpu::py
