#include "convert.hpp"

#include <pybind11/stl.h>

#include "core/error.hpp"

namespace qgpu::py {

pyb::object to_python(const nlohmann::json& j) { return pyb::module_::import("json").attr("loads")(j.dump()); }

Image<float> image_from_python(const pyb::array_t<float, pyb::array::c_style | pyb::array::forcecast>& a,
                               const std::string& backend) {
  if (a.ndim() != 2) throw InvalidArgument("expected a 2D array, got " + std::to_string(a.ndim()) + "D");
  Image<float> img;
  img.provenance.backend = backend;
  img.rows = a.shape(0);
  img.cols = a.shape(1);
  img.data.assign(a.data(), a.data() + a.size());
  return img;
}

namespace {

std::string shape_text(const std::vector<std::size_t>& dims) {
  std::string t;
  for (std::size_t d : dims) t += (t.empty() ? "" : "x") + std::to_string(d);
  return t.empty() ? "a scalar" : t;
}

}  // namespace

pyb::array mask_argument(const pyb::handle& mask, std::size_t rows, std::size_t cols, const std::string& what) {
  const std::string want = std::to_string(rows) + "x" + std::to_string(cols);
  std::vector<std::size_t> dims;
  if (pyb::isinstance<pyb::array>(mask)) {
    const auto a = pyb::reinterpret_borrow<pyb::array>(mask);
    for (pyb::ssize_t i = 0; i < a.ndim(); ++i) dims.push_back(std::size_t(a.shape(i)));
    if (dims.size() != 2 || dims[0] != rows || dims[1] != cols)
      throw InvalidArgument(what + " is " + shape_text(dims) + " but the detector is " + want);
    const char kind = a.dtype().kind();
    if (kind != 'b' && kind != 'u' && kind != 'i' && kind != 'f')
      throw InvalidArgument(what + " has dtype " + std::string(pyb::str(a.dtype())) +
                            ", which is not supported (bool, integer or float weights)");
    return a;
  }
  // Not an array (a nested list, ...): its lengths first, so that a wrong one is not converted.
  if (!pyb::isinstance<pyb::sequence>(mask) || pyb::isinstance<pyb::str>(mask) || pyb::isinstance<pyb::bytes>(mask))
    throw InvalidArgument(what + " must be a 2D array (detector " + want + "), got " +
                          std::string(pyb::str(pyb::type::handle_of(mask).attr("__name__"))));
  const auto seq = pyb::reinterpret_borrow<pyb::sequence>(mask);
  const std::size_t n = pyb::len(seq);
  const std::size_t first = n && pyb::isinstance<pyb::sequence>(seq[0]) ? pyb::len(seq[0]) : 0;
  if (n != rows || first != cols)
    throw InvalidArgument(what + " has " + std::to_string(n) + " rows of " + std::to_string(first) +
                          " values but the detector is " + want);
  return mask_argument(pyb::module_::import("numpy").attr("asarray")(mask), rows, cols, what);
}

Region region_from_python(const pyb::object& o) {
  if (o.is_none()) return {};
  const auto v = o.cast<std::vector<long long>>();
  if (v.size() != 4) throw InvalidArgument("a region is (row0, col0, rows, cols)");
  for (long long x : v)
    if (x < 0) throw RegionError("region values must be >= 0");
  return Region{std::size_t(v[0]), std::size_t(v[1]), std::size_t(v[2]), std::size_t(v[3])};
}

}  // namespace qgpu::py
