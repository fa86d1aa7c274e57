#include <pybind11/stl.h>

#include <cmath>

#include "convert.hpp"
#include "detector/virtual_detector.hpp"
#include "resident/scan_bin.hpp"

namespace qgpu::py {

namespace {

std::optional<detector::Center> center_of(const pyb::object& o) {
  if (o.is_none()) return std::nullopt;
  const auto v = o.cast<std::vector<double>>();
  if (v.size() != 2) throw InvalidArgument("center is (row, col)");
  return detector::Center{v[0], v[1]};
}

pyb::array_t<std::uint32_t> mask_to_python(const detector::Mask& m) {
  pyb::array_t<std::uint32_t> a({m.rows, m.cols});
  std::copy(m.weights.begin(), m.weights.end(), a.mutable_data());
  return a;
}

}  // namespace

void bind_detector(pyb::module_& m) {
  using detector::Center;
  m.def("bf", [](const Dataset& ds, std::optional<double> radius, const pyb::object& center, std::size_t scan_bin) {
    const auto c = center_of(center);  // with the GIL held
    SumImage img;
    {
      pyb::gil_scoped_release release;
      img = detector::bf(ds, radius, c, scan_bin);
    }
    return image_to_python(std::move(img));
  }, pyb::arg("ds"), pyb::arg("radius") = pyb::none(), pyb::arg("center") = pyb::none(), pyb::arg("scan_bin") = 1);
  m.def("adf", [](const Dataset& ds, double inner, double outer, const pyb::object& center, std::size_t scan_bin) {
    const auto c = center_of(center);
    return image_to_python(nogil([&] { return detector::adf(ds, inner, outer, c, scan_bin); }));
  }, pyb::arg("ds"), pyb::arg("inner"), pyb::arg("outer"), pyb::arg("center") = pyb::none(), pyb::arg("scan_bin") = 1);
  m.def("df", [](const Dataset& ds, const pyb::object& center, double radius, std::size_t scan_bin) {
    const auto c = center_of(center);
    if (!c) throw InvalidArgument("df needs a center (row, col)");
    return image_to_python(nogil([&] { return detector::df(ds, *c, radius, scan_bin); }));
  }, pyb::arg("ds"), pyb::arg("center"), pyb::arg("radius"), pyb::arg("scan_bin") = 1);
  // The result dtype follows the mask's and the data's dtype: unsigned counts with a bool / unsigned mask -> exact
  // uint64; a signed integer mask or signed data -> exact int64; float data -> float64; a float mask -> integer
  // weights when every weight is a whole number, else InvalidArgument (no silent truncation).
  m.def("virtual_image", [](const Dataset& ds, const pyb::object& mask_arg, std::size_t scan_bin) -> pyb::tuple {
    check_scan_bin(ds.shape(), scan_bin);
    // Shape and dtype from the array's header, before any conversion copies it.
    const pyb::array w = mask_argument(mask_arg, ds.shape().det_rows, ds.shape().det_cols, "mask");
    const char kind = w.dtype().kind();
    const std::size_t rows = w.shape(0), cols = w.shape(1);
    if (kind == 'b' || kind == 'u') {
      const auto u = pyb::array_t<std::uint64_t, pyb::array::c_style | pyb::array::forcecast>::ensure(w);
      std::vector<std::uint32_t> weights(u.size());
      for (pyb::ssize_t i = 0; i < u.size(); ++i) {
        if (u.data()[i] > 0xFFFFFFFFull)
          throw InvalidArgument("mask weight " + std::to_string(u.data()[i]) + " exceeds 2^32 - 1");
        weights[i] = std::uint32_t(u.data()[i]);
      }
      const detector::Mask mask = detector::from_weights(rows, cols, std::move(weights));
      SumImage img;
      {
        pyb::gil_scoped_release release;
        img = detector::virtual_image(ds, mask, scan_bin);
      }
      return image_to_python(std::move(img));
    }
    detector::SignedMask mask{rows, cols, {}};
    if (kind == 'i') {
      const auto s = pyb::array_t<std::int64_t, pyb::array::c_style | pyb::array::forcecast>::ensure(w);
      mask.weights.assign(s.data(), s.data() + s.size());
    } else {  // 'f' (mask_argument took only bool, integer and float kinds)
      const auto f = pyb::array_t<double, pyb::array::c_style | pyb::array::forcecast>::ensure(w);
      mask.weights.resize(f.size());
      for (pyb::ssize_t i = 0; i < f.size(); ++i) {
        const double v = f.data()[i];
        if (!std::isfinite(v) || v != std::floor(v) || std::abs(v) > 4294967295.0)
          throw InvalidArgument("float mask weight " + std::to_string(v) + " at pixel " + std::to_string(i) +
                                " is not a whole number within +-(2^32 - 1): virtual detectors sum counts exactly "
                                "with integer weights (scale fractional weights to integers and divide the result)");
        mask.weights[i] = std::int64_t(v);
      }
    }
    SumImage img;
    {
      pyb::gil_scoped_release release;
      img = detector::virtual_image(ds, mask);
      if (scan_bin > 1)  // signed weights: the full image's b x b block sums (exact for integers)
        img.visit([&](auto& im) {
          im.data = bin_scan_sums(std::move(im.data), im.rows, im.cols, scan_bin);
          im.rows /= scan_bin;
          im.cols /= scan_bin;
          im.provenance.output_shape = {im.rows, im.cols};
          im.provenance.parameters["scan_bin"] = scan_bin;
        });
    }
    return image_to_python(std::move(img));
  }, pyb::arg("ds"), pyb::arg("mask"), pyb::arg("scan_bin") = 1);
  m.def("default_adf_radii", [](const Dataset& ds, const pyb::object& center, std::optional<double> radius) {
    const auto c = center_of(center);
    if (radius && !(std::isfinite(*radius) && *radius > 0)) throw InvalidArgument("radius must be finite and > 0");
    const detector::AnnulusRadii r = nogil([&] { return detector::default_adf_radii(ds, c, radius); });
    return pyb::make_tuple(r.inner, r.outer);
  }, pyb::arg("ds"), pyb::arg("center") = pyb::none(), pyb::arg("radius") = pyb::none());
  m.def("sum_pattern", [](const Dataset& ds) {
    return image_to_python(nogil([&] { return detector::sum_pattern(ds); }));
  });
  m.def("max_pattern", [](const Dataset& ds) {
    return image_to_python(nogil([&] { return detector::max_pattern(ds); }));
  });
  m.def("mean_pattern", [](const Dataset& ds) {
    return image_to_python(nogil([&] { return detector::mean_pattern(ds); }));
  });
  m.def("fit_bf_disk", [](const Dataset& ds) {
    const auto f = nogil([&] { return detector::fit_bf_disk(ds); });
    pyb::dict d = to_python(detector::fit_json(f));  // confidence, method, edge levels, warning when uncertain
    d["center"] = pyb::make_tuple(f.center_row, f.center_col);
    return d;
  });
  m.def("disk_mask", [](std::size_t rows, std::size_t cols, double cr, double cc, double r) {
    return mask_to_python(detector::disk(rows, cols, cr, cc, r));
  }, pyb::arg("rows"), pyb::arg("cols"), pyb::arg("center_row"), pyb::arg("center_col"), pyb::arg("radius"));
  m.def("annulus_mask", [](std::size_t rows, std::size_t cols, double cr, double cc, double inner, double outer) {
    return mask_to_python(detector::annulus(rows, cols, cr, cc, inner, outer));
  }, pyb::arg("rows"), pyb::arg("cols"), pyb::arg("center_row"), pyb::arg("center_col"), pyb::arg("inner"),
     pyb::arg("outer"));
}

}  // namespace qgpu::py
