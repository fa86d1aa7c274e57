#include "display/display.hpp"

#include <cstring>
#include <type_traits>
#include <unordered_map>

#include "core/error.hpp"
#include "display/cpu/display_cpu.hpp"
#include "display/cuda/display_cuda.hpp"
#include "display/vulkan/display_vulkan.hpp"

namespace qgpu::display {

namespace {

template <class T> void check_image(const Image<T>& img, const std::string& op) {
  if (img.rows == 0 || img.cols == 0)
    throw InvalidArgument(op + ": image is empty (" + std::to_string(img.rows) + "x" + std::to_string(img.cols) + ")");
  if (img.data.size() != img.rows * img.cols)
    throw InvalidArgument(op + ": image holds " + std::to_string(img.data.size()) + " values for " +
                          std::to_string(img.rows) + "x" + std::to_string(img.cols));
}

void check_backend(Backend b, const std::string& op) {
  if (b == Backend::vulkan) resolve("vulkan");  // BackendUnavailable naming why, never a fallback
  if (b == Backend::cuda && !detect().cuda_available)
    throw BackendUnavailable(op + ": backend 'cuda' needs a usable CUDA GPU, but none is available: " +
                             detect().reason);
}

template <class T>
Provenance provenance_of(const std::string& op, Backend b, const Image<T>& img, const std::string& out_dtype,
                         std::vector<std::size_t> out_shape, const std::string& representation) {
  Provenance p;
  p.operation = op;
  p.backend = backend_name(b);
  p.input_dtype = std::is_same_v<T, float> ? "float32" : "uint64";
  p.input_shape = {img.rows, img.cols};
  p.output_dtype = out_dtype;
  p.output_shape = std::move(out_shape);
  p.representation = representation;
  if (!img.provenance.operation.empty()) p.parameters["input_operation"] = img.provenance.operation;
  return p;
}

void add_range_parameters(nlohmann::json& j, const DisplayOptions& o, const Range& r) {
  j["colormap"] = o.colormap;
  j["scale"] = scale_name(o.scale);
  j["lower_percentile"] = o.lower_percentile;
  j["upper_percentile"] = o.upper_percentile;
  j["vmin"] = o.vmin ? nlohmann::json(*o.vmin) : nlohmann::json(nullptr);
  j["vmax"] = o.vmax ? nlohmann::json(*o.vmax) : nlohmann::json(nullptr);
  j["lo"] = r.lo;
  j["hi"] = r.hi;
  j["non_finite"] = "transparent (0,0,0,0), not counted";
}

}  // namespace

Rgba render(const Image<float>& img, const DisplayOptions& o) {
  const std::string op = "display.render";
  check_image(img, op);
  const Backend b = backend_of(img.provenance);
  validate(o);
  check_backend(b, op);
  const Lut& lut = colormap(o.colormap);
  Rgba out;
  out.rows = img.rows;
  out.cols = img.cols;
  out.rgba.resize(img.data.size() * 4);
  const Range r = b == Backend::cuda     ? cuda::render(img.data.data(), img.data.size(), o, lut, out.rgba.data())
                  : b == Backend::vulkan ? vulkan::render(img.data.data(), img.data.size(), o, lut, out.rgba.data())
                                         : cpu::render(img.data.data(), img.data.size(), o, lut, out.rgba.data());
  out.provenance = provenance_of(op, b, img, "uint8", {img.rows, img.cols, 4}, "rgba8");
  add_range_parameters(out.provenance.parameters, o, r);
  return out;
}

namespace {

// Floats on any backend; counts on cuda only (converted there; the other backends render as_float of them).
template <class T> Indexed render_indexed_of(const Image<T>& img, const DisplayOptions& o) {
  const std::string op = "display.render_indexed";
  check_image(img, op);
  const Backend b = backend_of(img.provenance);
  validate(o);
  check_backend(b, op);
  Indexed out;
  out.rows = img.rows;
  out.cols = img.cols;
  out.index.resize(img.data.size());
  Range r;
  if constexpr (!std::is_same_v<T, float>) {
    r = cuda::render_indexed(img.data.data(), img.data.size(), o, out.index.data(), &out.transparent);
  } else if (b == Backend::vulkan) {  // rendered there, each colour's index looked up here
    const Lut& lut = colormap(o.colormap);
    std::vector<std::uint8_t> rgba(img.data.size() * 4);
    r = vulkan::render(img.data.data(), img.data.size(), o, lut, rgba.data());
    std::unordered_map<std::uint32_t, std::uint8_t> at;
    for (int i = 255; i >= 0; --i) {  // the lowest index of a colour the map repeats
      std::uint32_t c;
      std::memcpy(&c, lut.data() + 4 * i, 4);
      at[c] = std::uint8_t(i);
    }
    for (std::size_t i = 0; i < img.data.size(); ++i) {
      std::uint32_t c;
      std::memcpy(&c, rgba.data() + 4 * i, 4);
      const auto it = at.find(c);
      if (it == at.end()) ++out.transparent;  // transparent black: not a map colour
      out.index[i] = it == at.end() ? 0 : it->second;
    }
  } else {
    r = b == Backend::cuda ? cuda::render_indexed(img.data.data(), img.data.size(), o, out.index.data(), &out.transparent)
                           : cpu::render_indexed(img.data.data(), img.data.size(), o, out.index.data(), &out.transparent);
  }
  out.provenance = provenance_of(op, b, img, "uint8", {img.rows, img.cols}, "colormap index");
  add_range_parameters(out.provenance.parameters, o, r);
  return out;
}

}  // namespace

Indexed render_indexed(const Image<float>& img, const DisplayOptions& o) { return render_indexed_of(img, o); }

Indexed render_indexed(const Image<std::uint64_t>& img, const DisplayOptions& o) {
  if (backend_of(img.provenance) != Backend::cuda) return render_indexed(as_float(img), o);
  return render_indexed_of(img, o);
}

Histogram histogram(const Image<float>& img, const DisplayOptions& o) {
  const std::string op = "display.histogram";
  check_image(img, op);
  const Backend b = backend_of(img.provenance);
  validate(o);
  check_backend(b, op);
  Histogram h;
  const Range r = b == Backend::cuda     ? cuda::histogram(img.data.data(), img.data.size(), o, h.counts)
                  : b == Backend::vulkan ? vulkan::histogram(img.data.data(), img.data.size(), o, h.counts)
                                         : cpu::histogram(img.data.data(), img.data.size(), o, h.counts);
  h.lo = r.lo;
  h.hi = r.hi;
  h.provenance = provenance_of(op, b, img, "uint64", {256}, "histogram256");
  add_range_parameters(h.provenance.parameters, o, r);
  return h;
}

Image<float> fft_log_magnitude(const Image<float>& img) {
  const std::string op = "display.fft_log_magnitude";
  check_image(img, op);
  const Backend b = backend_of(img.provenance);
  check_backend(b, op);
  Image<float> out;
  out.rows = img.rows;
  out.cols = img.cols;
  out.data = b == Backend::cuda     ? cuda::fft_log_magnitude(img.data.data(), img.rows, img.cols)
             : b == Backend::vulkan ? vulkan::fft_log_magnitude(img.data.data(), img.rows, img.cols)
                                    : cpu::fft_log_magnitude(img.data.data(), img.rows, img.cols);
  out.provenance = provenance_of(op, b, img, "float32", {img.rows, img.cols}, "log1p_abs_fft2_shifted");
  out.provenance.parameters["transform"] = "forward, unnormalised, single precision";
  out.provenance.parameters["zero_frequency"] = {img.rows / 2, img.cols / 2};
  return out;
}

}  // namespace qgpu::display
