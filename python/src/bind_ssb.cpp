#include <pybind11/stl.h>

#include <algorithm>
#include <string>
#include <vector>

#include "convert.hpp"
#include "ssb/ssb.hpp"

namespace qgpu::py {

namespace {

ssb::SsbParams params(const Dataset& ds, const pyb::dict& kw) {
  static const std::vector<std::string> known = {"energy", "semiangle", "step", "mrad_per_pixel", "rotation",
                                                 "defocus", "C1", "A1", "A1_angle", "C3", "disk_center", "disk_radius",
                                                 "transpose", "weighting"};
  for (const auto& item : kw) {
    const std::string k = pyb::str(item.first);
    if (std::find(known.begin(), known.end(), k) == known.end()) {
      std::string list;
      for (const std::string& n : known) list += (list.empty() ? "" : ", ") + n;
      throw InvalidArgument("ssb: unknown parameter '" + k + "' (known: " + list + ")");
    }
  }
  ssb::SsbParams p;
  if (ds.metadata().contains("calibration") && ds.metadata()["calibration"].contains("energy_kev"))
    p = ssb::params_from_metadata(ds);
  auto num = [&](const char* k, double& dst) {
    if (kw.contains(k) && !kw[k].is_none()) dst = kw[k].cast<double>();
  };
  num("energy", p.energy_kev);
  num("semiangle", p.semiangle_mrad);
  num("step", p.scan_step_angstrom);
  num("mrad_per_pixel", p.detector_mrad_per_pixel);
  num("rotation", p.rotation_deg);
  if (kw.contains("defocus") && kw.contains("C1") && !kw["defocus"].is_none() && !kw["C1"].is_none())
    throw InvalidArgument("ssb: give C1 or defocus (the same Krivanek C1), not both");
  num("defocus", p.aberrations.C1);
  num("C1", p.aberrations.C1);
  if (kw.contains("transpose") && !kw["transpose"].is_none()) p.transpose = kw["transpose"].cast<bool>();
  if (kw.contains("weighting") && !kw["weighting"].is_none())
    p.weighting = ssb::parse_weighting(kw["weighting"].cast<std::string>());
  num("A1", p.aberrations.A1);
  num("A1_angle", p.aberrations.A1_angle);
  num("C3", p.aberrations.C3);
  if (kw.contains("disk_center") && !kw["disk_center"].is_none())
    p.disk_center = kw["disk_center"].cast<std::pair<double, double>>();
  if (kw.contains("disk_radius") && !kw["disk_radius"].is_none()) p.disk_radius = kw["disk_radius"].cast<double>();
  return p;
}

pyb::dict aberrations(const ssb::Aberrations& a) {
  pyb::dict d;
  d["C1"] = a.C1;
  d["A1"] = a.A1;
  d["A1_angle"] = a.A1_angle;
  d["B2"] = a.B2;
  d["A2"] = a.A2;
  d["C3"] = a.C3;
  return d;
}

}  // namespace

void bind_ssb(pyb::module_& m) {
  m.def("ssb_reconstruct", [](const Dataset& ds, const pyb::dict& kw) {
    const ssb::SsbParams p = params(ds, kw);
    ssb::SsbResult r;
    {
      pyb::gil_scoped_release release;
      r = ssb::reconstruct(ds, p);
    }
    return image_to_python(r.phase);
  });
  m.def("ssb_preview", [](const Dataset& ds, std::size_t bin, const pyb::dict& kw) {
    const ssb::SsbParams p = params(ds, kw);
    ssb::SsbResult r;
    {
      pyb::gil_scoped_release release;
      r = ssb::preview(ds, p, bin);
    }
    return image_to_python(r.phase);
  });
  m.def("ssb_fit", [](const Dataset& ds, std::size_t trials, std::pair<double, double> c1_range, bool astig,
                      std::size_t bin, std::uint64_t seed, const pyb::dict& kw) {
    ssb::FitOptions o;
    o.trials = trials;
    o.c1_min = c1_range.first;
    o.c1_max = c1_range.second;
    o.fit_astigmatism = astig;
    o.detector_bin = bin;
    o.seed = seed;
    const ssb::SsbParams p = params(ds, kw);
    ssb::FitResult f;
    {
      pyb::gil_scoped_release release;
      f = ssb::fit(ds, p, o);
    }
    pyb::dict d;
    d["aberrations"] = aberrations(f.aberrations);
    d["loss"] = f.loss;
    d["loss_trace"] = f.loss_trace;
    d["provenance"] = to_python(f.provenance.to_json());
    return d;
  });
}

}  // namespace qgpu::py
