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

Region region_from_python(const pyb::object& o) {
  if (o.is_none()) return {};
  const auto v = o.cast<std::vector<long long>>();
  if (v.size() != 4) throw InvalidArgument("a region is (row0, col0, rows, cols)");
  for (long long x : v)
    if (x < 0) throw RegionError("region values must be >= 0");
  return Region{std::size_t(v[0]), std::size_t(v[1]), std::size_t(v[2]), std::size_t(v[3])};
}

}  // namespace qgpu::py
