#pragma once
// Conversions between quantem-gpu types and Python objects.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <nlohmann/json.hpp>

#include "core/image.hpp"
#include "resident/shape.hpp"

namespace qgpu::py {

namespace pyb = pybind11;

// Runs a C++ computation with the GIL released (other Python threads run meanwhile); touch no Python object in f.
template <class F> auto nogil(F&& f) {
  pybind11::gil_scoped_release release;
  return f();
}

// JSON -> Python dict/list/scalars (through the json module).
pyb::object to_python(const nlohmann::json& j);

// Image<T> -> (numpy array rows x cols, provenance dict).
template <class T> pyb::tuple image_to_python(const Image<T>& img) {
  pyb::array_t<T> a({img.rows, img.cols});
  std::copy(img.data.begin(), img.data.end(), a.mutable_data());
  return pyb::make_tuple(a, to_python(img.provenance.to_json()));
}

// 2D float array -> Image<float> recorded as living on `backend` ("cpu" | "cuda", the backend of the Python
// object it came from; "" = plain host data); InvalidArgument unless 2D.
Image<float> image_from_python(const pyb::array_t<float, pyb::array::c_style | pyb::array::forcecast>& a,
                               const std::string& backend = "");

// None or (row0, col0, rows, cols) -> Region.
Region region_from_python(const pyb::object& o);

}  // namespace qgpu::py
