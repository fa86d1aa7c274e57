#pragma once
// A 2D result on the host, row-major (row, col), with its provenance.
#include <cstddef>
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "core/dtype.hpp"
#include "core/error.hpp"

#include "core/provenance.hpp"

namespace qgpu {

template <class T> struct Image {
  std::size_t rows = 0;
  std::size_t cols = 0;
  std::vector<T> data;  // rows * cols, row-major
  Provenance provenance;

  T& at(std::size_t r, std::size_t c) { return data[r * cols + c]; }
  const T& at(std::size_t r, std::size_t c) const { return data[r * cols + c]; }
};

// The same image with float values and the same provenance (what display renders; the CLI, the service and the
// movie writer all show images this way).
template <class T> Image<float> as_float(const Image<T>& img) {
  Image<float> f;
  f.rows = img.rows;
  f.cols = img.cols;
  f.data.assign(img.data.begin(), img.data.end());
  f.provenance = img.provenance;  // rendered where the result lives
  return f;
}

// Sums over a dataset's elements (virtual images, summed and largest patterns): uint64 for unsigned counts, int64 for
// signed integers, float64 for float data (core/dtype.hpp sum_t). Exact for the integer kinds.
struct SumImage {
  std::variant<Image<std::uint64_t>, Image<std::int64_t>, Image<double>> image;

  SumImage() = default;
  template <class T> SumImage(Image<T> img) : image(std::move(img)) {}  // NOLINT: implicit on purpose

  template <class F> decltype(auto) visit(F&& f) const { return std::visit(std::forward<F>(f), image); }
  template <class F> decltype(auto) visit(F&& f) { return std::visit(std::forward<F>(f), image); }
  std::size_t rows() const { return visit([](const auto& i) { return i.rows; }); }
  std::size_t cols() const { return visit([](const auto& i) { return i.cols; }); }
  const Provenance& provenance() const {
    return visit([](const auto& i) -> const Provenance& { return i.provenance; });
  }
  Provenance& provenance() {
    return visit([](auto& i) -> Provenance& { return i.provenance; });
  }
  DType dtype() const {
    return visit([](const auto& i) { return dtype_of<typename std::decay_t<decltype(i.data)>::value_type>::value; });
  }
  // The uint64 sums of unsigned counts; DTypeError naming `what` (the product that needs them) for other data.
  const Image<std::uint64_t>& counts(const std::string& what) const {
    if (const auto* u = std::get_if<Image<std::uint64_t>>(&image)) return *u;
    throw DTypeError(what + " works on unsigned counts; these sums are " + dtype_name(dtype()) +
                     " (the dataset holds signed or float data)");
  }
  // The uint64 sums moved out (counts() for a temporary).
  Image<std::uint64_t> take_counts(const std::string& what) && {
    counts(what);
    return std::move(std::get<Image<std::uint64_t>>(image));
  }
  // The image as Image<T> (a copy) when it holds T sums; DTypeError naming both dtypes otherwise. Lets code written
  // for one kind (tests, unsigned-only tools) read `Image<std::uint64_t> img = detector::bf(...)`.
  template <class T> operator Image<T>() const {  // NOLINT: implicit on purpose
    if (const auto* i = std::get_if<Image<T>>(&image)) return *i;
    throw DTypeError("sums are " + dtype_name(dtype()) + ", not " + dtype_name(dtype_of<T>::value));
  }
  Image<float> to_float() const {
    return visit([](const auto& i) { return as_float(i); });
  }
};

}  // namespace qgpu
