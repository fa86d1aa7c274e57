#include <pybind11/stl.h>

#include <algorithm>
#include <string>
#include <vector>

#include "convert.hpp"
#include "parallax/parallax.hpp"

namespace qgpu::py {

namespace {

parallax::ParallaxParams params(const Dataset& ds, const pyb::dict& kw) {
  static const std::vector<std::string> known = {"energy",     "semiangle", "step",        "mrad_per_pixel",
                                                 "disk_center", "disk_radius", "edge",     "detector_bin",
                                                 "upsample",   "iterations", "search",     "measured_shifts",
                                                 "defocus_sign"};
  for (const auto& item : kw) {
    const std::string k = pyb::str(item.first);
    if (std::find(known.begin(), known.end(), k) == known.end()) {
      std::string list;
      for (const std::string& n : known) list += (list.empty() ? "" : ", ") + n;
      throw InvalidArgument("parallax: unknown parameter '" + k + "' (known: " + list + ")");
    }
  }
  parallax::ParallaxParams p = parallax::params_from_metadata(ds);
  auto given = [&](const char* k) { return kw.contains(k) && !kw[k].is_none(); };
  auto num = [&](const char* k, double& dst) {
    if (given(k)) dst = kw[k].cast<double>();
  };
  for (const auto& [k, key] : {std::pair<const char*, const char*>{"energy", "energy_kev"}, {"semiangle", "semiangle_mrad"},
                               {"step", "scan_step_angstrom"}, {"mrad_per_pixel", "detector_mrad_per_pixel"}})
    if (given(k)) p.sources[key] = std::string("given (parallax: ") + k + ")";
  auto count = [&](const char* k, std::size_t& dst) {
    if (given(k)) dst = kw[k].cast<std::size_t>();
  };
  num("energy", p.energy_kev);
  num("semiangle", p.semiangle_mrad);
  num("step", p.scan_step_angstrom);
  num("mrad_per_pixel", p.detector_mrad_per_pixel);
  num("edge", p.edge_px);
  num("defocus_sign", p.c1_sign_hint);
  count("detector_bin", p.detector_bin);
  count("upsample", p.upsample);
  count("iterations", p.iterations);
  count("search", p.search_px);
  if (given("measured_shifts")) p.use_fitted_shifts = !kw["measured_shifts"].cast<bool>();
  if (given("disk_center")) p.disk_center = kw["disk_center"].cast<std::pair<double, double>>();
  if (given("disk_radius")) p.disk_radius = kw["disk_radius"].cast<double>();
  return p;
}

pyb::dict to_dict(const parallax::ParallaxResult& r, bool with_image) {
  pyb::dict d;
  if (with_image) d["image"] = image_to_python(r.image);
  d["bf"] = image_to_python(r.bf);
  d["fit"] = to_python(parallax::fit_json(r.fit));
  d["det_row"] = r.det_row;
  d["det_col"] = r.det_col;
  d["shift_row"] = r.shift_row;
  d["shift_col"] = r.shift_col;
  d["provenance"] = to_python(r.provenance.to_json());
  return d;
}

}  // namespace

void bind_parallax(pyb::module_& m) {
  m.def("parallax_run", [](const Dataset& ds, const pyb::dict& kw) {
    const parallax::ParallaxParams p = params(ds, kw);
    const parallax::ParallaxResult r = nogil([&] { return parallax::run(ds, p); });
    return to_dict(r, true);
  });
  m.def("parallax_fit", [](const Dataset& ds, const pyb::dict& kw) {
    const parallax::ParallaxParams p = params(ds, kw);
    const parallax::ParallaxResult r = nogil([&] { return parallax::fit_only(ds, p); });
    return to_dict(r, false);
  });
}

}  // namespace qgpu::py
