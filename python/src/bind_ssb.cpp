#include <pybind11/stl.h>

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "convert.hpp"
#include "ssb/params.hpp"
#include "ssb/ssb.hpp"

namespace qgpu::py {

namespace {

// The keyword that sets each SSB parameter (errors name what the user typed).
std::string keyword_of(const std::string& key) {
  static const std::map<std::string, std::string> keywords = {
      {"energy_kev", "energy"}, {"semiangle_mrad", "semiangle"}, {"scan_step_angstrom", "step"},
      {"detector_mrad_per_pixel", "mrad_per_pixel"}, {"rotation_deg", "rotation"}, {"C1", "C1 (defocus)"}};
  const auto it = keywords.find(key);
  return "ssb: " + (it == keywords.end() ? key : it->second);
}

// The file's calibration with the keywords given (ssb::resolve_params, as the CLI and the service resolve theirs).
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
  auto num = [&](const char* k) -> std::optional<double> {
    if (kw.contains(k) && !kw[k].is_none()) return kw[k].cast<double>();
    return std::nullopt;
  };
  if (num("defocus") && num("C1")) throw InvalidArgument("ssb: give C1 or defocus (the same Krivanek C1), not both");
  ssb::ParamOverrides o;
  o.energy_kev = num("energy");
  o.semiangle_mrad = num("semiangle");
  o.scan_step_angstrom = num("step");
  o.detector_mrad_per_pixel = num("mrad_per_pixel");
  o.rotation_deg = num("rotation");
  o.C1 = num("defocus") ? num("defocus") : num("C1");
  o.A1 = num("A1");
  o.A1_angle = num("A1_angle");
  o.C3 = num("C3");
  o.disk_radius = num("disk_radius");
  if (kw.contains("transpose") && !kw["transpose"].is_none()) o.transpose = kw["transpose"].cast<bool>();
  if (kw.contains("weighting") && !kw["weighting"].is_none()) o.weighting = kw["weighting"].cast<std::string>();
  if (kw.contains("disk_center") && !kw["disk_center"].is_none())
    o.disk_center = kw["disk_center"].cast<std::pair<double, double>>();
  return ssb::resolve_params(ds.metadata(), o, keyword_of);
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
    return pyb::make_tuple(image_to_python(std::move(r.phase)), image_to_python(std::move(r.amplitude)));
  });
  m.def("ssb_preview", [](const Dataset& ds, std::size_t bin, const pyb::dict& kw) {
    const ssb::SsbParams p = params(ds, kw);
    ssb::SsbResult r;
    {
      pyb::gil_scoped_release release;
      r = ssb::preview(ds, p, bin);
    }
    return pyb::make_tuple(image_to_python(std::move(r.phase)), image_to_python(std::move(r.amplitude)));
  });
  // G(K, Q) kept for a dataset, its parameters and a detector bin (ssb::Reconstructor: the live defocus slider);
  // at() takes the aberrations to change (C1 / defocus, A1, A1_angle, C3) and a scan bin.
  pyb::class_<ssb::Reconstructor>(m, "SsbReconstructor")
      .def(pyb::init([](const Dataset& ds, std::size_t bin, const pyb::dict& kw) {
             const ssb::SsbParams p = params(ds, kw);
             pyb::gil_scoped_release release;
             return std::make_unique<ssb::Reconstructor>(ds, p, bin);
           }),
           pyb::arg("ds"), pyb::arg("detector_bin"), pyb::arg("params"))
      .def("at", [](ssb::Reconstructor& r, const pyb::dict& change, std::size_t scan_bin) {
        ssb::Aberrations a = r.params().aberrations;
        for (const auto& item : change) {
          const std::string k = pyb::str(item.first);
          const double v = item.second.cast<double>();
          if (k == "C1" || k == "defocus") a.C1 = v;
          else if (k == "A1") a.A1 = v;
          else if (k == "A1_angle") a.A1_angle = v;
          else if (k == "C3") a.C3 = v;
          else throw InvalidArgument("ssb: unknown aberration '" + k + "' (known: C1, defocus, A1, A1_angle, C3)");
        }
        ssb::SsbResult res;
        {
          pyb::gil_scoped_release release;
          res = r.at(a, scan_bin);
        }
        return pyb::make_tuple(image_to_python(std::move(res.phase)), image_to_python(std::move(res.amplitude)));
      }, pyb::arg("change"), pyb::arg("scan_bin") = 1)
      .def_property_readonly("detector_bin", &ssb::Reconstructor::detector_bin);
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
    d["warning"] = f.warning;
    d["provenance"] = to_python(f.provenance.to_json());
    return d;
  });
}

}  // namespace qgpu::py
