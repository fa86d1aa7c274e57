#include <pybind11/stl.h>

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "convert.hpp"
#include "optics/resolve.hpp"
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
  auto given = [&](const char* k) { return kw.contains(k) && !kw[k].is_none(); };
  auto num = [&](const char* k) { return given(k) ? std::optional<double>(kw[k].cast<double>()) : std::nullopt; };
  // The optics: the file's calibration with the given keywords (optics/resolve.hpp, the resolver of every front end).
  static const std::map<std::string, std::string> keyword = {
      {"energy_kev", "energy"}, {"semiangle_mrad", "semiangle"}, {"scan_step_angstrom", "step"},
      {"detector_mrad_per_pixel", "mrad_per_pixel"}, {"disk_center", "disk_center"}, {"disk_radius", "disk_radius"},
      {"edge_px", "edge"}, {"detector_bin", "detector_bin"}, {"upsample", "upsample"}, {"iterations", "iterations"},
      {"search_px", "search"}, {"c1_sign_hint", "defocus_sign"}};
  const optics::Namer name_of = [](const std::string& key) {
    const auto it = keyword.find(key);
    return "parallax: " + (it == keyword.end() ? key : it->second);
  };
  optics::Overrides o;
  o.energy_kev = num("energy");
  o.semiangle_mrad = num("semiangle");
  o.scan_step_angstrom = num("step");
  o.detector_mrad_per_pixel = num("mrad_per_pixel");
  if (given("disk_center")) o.disk_center = kw["disk_center"].cast<std::pair<double, double>>();
  o.disk_radius = num("disk_radius");
  parallax::ParallaxParams p = parallax::resolve_params(ds.metadata(), o, name_of);
  auto count = [&](const char* k, std::size_t& dst) {
    if (given(k)) dst = kw[k].cast<std::size_t>();
  };
  if (const auto v = num("edge")) p.edge_px = *v;
  if (const auto v = num("defocus_sign")) p.c1_sign_hint = *v;
  count("detector_bin", p.detector_bin);
  count("upsample", p.upsample);
  count("iterations", p.iterations);
  count("search", p.search_px);
  if (given("measured_shifts")) p.use_fitted_shifts = !kw["measured_shifts"].cast<bool>();
  parallax::check_settings(p, name_of);
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
