#pragma once
// Conversions between quantem-gpu types and Python objects.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl/filesystem.h>

#include <filesystem>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "core/result_memory.hpp"

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

// A file path argument: str, bytes or any os.PathLike (pathlib.Path), through pybind11's filesystem caster.
using PathArg = std::filesystem::path;

// JSON -> Python dict/list/scalars (through the json module).
pyb::object to_python(const nlohmann::json& j);

// Image<T> -> (numpy array rows x cols, provenance dict).
template <class T> pyb::tuple image_to_python(const Image<T>& img) {
  pyb::array_t<T> a({img.rows, img.cols});
  std::copy(img.data.begin(), img.data.end(), a.mutable_data());
  return pyb::make_tuple(a, to_python(img.provenance.to_json()));
}

// The same from an image given up: the array views the image's own values, moved into a holder the array owns
// (no copy: a 4096x4096 uint64 image is 134 MB, whose copy into fresh numpy memory cost about as much as computing it).
// A numpy array of `shape` viewing v's values (its size their product), owning them; when the array is freed its
// memory goes to the next large result of that size (result_memory.hpp).
template <class T> pyb::array_t<T> owning_array(std::vector<T>&& v, std::vector<pyb::ssize_t> shape) {
  auto held = std::make_unique<std::vector<T>>(std::move(v));
  const T* values = held->data();
  pyb::capsule owner(held.get(), [](void* p) {
    auto* kept = static_cast<std::vector<T>*>(p);
    recycle_result(std::move(*kept));
    delete kept;
  });
  held.release();  // the capsule owns it now
  return pyb::array_t<T>(std::move(shape), values, owner);
}

template <class T> pyb::tuple image_to_python(Image<T>&& img) {
  if (img.data.empty() || img.data.size() != img.rows * img.cols) return image_to_python(std::as_const(img));
  const auto rows = pyb::ssize_t(img.rows), cols = pyb::ssize_t(img.cols);
  pyb::array_t<T> a = owning_array(std::move(img.data), {rows, cols});
  return pyb::make_tuple(a, to_python(img.provenance.to_json()));
}

// SumImage -> (numpy array of uint64 / int64 / float64, provenance dict).
inline pyb::tuple image_to_python(const SumImage& img) {
  return img.visit([](const auto& i) { return image_to_python(i); });
}
inline pyb::tuple image_to_python(SumImage&& img) {
  return img.visit([](auto& i) { return image_to_python(std::move(i)); });
}

// 2D float array -> Image<float> recorded as living on `backend` ("cpu" | "cuda", the backend of the Python
// object it came from; "" = plain host data); InvalidArgument unless 2D.
Image<float> image_from_python(const pyb::array_t<float, pyb::array::c_style | pyb::array::forcecast>& a,
                               const std::string& backend = "");

// A detector mask argument as a numpy array, after checking its shape (rows x cols) and dtype kind (bool,
// integer or float) from the array's own header: a wrong mask is refused before any copy or conversion (a
// 60 MB mask of the wrong shape costs nothing). A nested list is checked by its lengths first, then converted.
// InvalidArgument naming `what` otherwise.
pyb::array mask_argument(const pyb::handle& mask, std::size_t rows, std::size_t cols, const std::string& what);

// A Python progress callable (or None) as the C++ progress callback (fraction in [0, 1]), called with the GIL.
inline std::function<void(double)> progress_callback(const pyb::object& progress) {
  if (progress.is_none()) return {};
  pyb::function cb = progress;
  return [cb](double f) {
    pyb::gil_scoped_acquire acquire;
    cb(f);
  };
}

// None or (row0, col0, rows, cols) -> Region.
Region region_from_python(const pyb::object& o);

}  // namespace qgpu::py
