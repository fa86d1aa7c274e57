#pragma once
// Response bodies: raw little-endian arrays, JSON images (exact for uint64), PNG in memory.
#include <bit>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/image.hpp"
#include "display/colormap.hpp"
#include "display/results.hpp"

namespace qgpu::remote {

static_assert(std::endian::native == std::endian::little, "raw responses are sent in host byte order");

template <class T> std::string raw_bytes(const std::vector<T>& v) {
  std::string out(v.size() * sizeof(T), '\0');
  if (!v.empty()) std::memcpy(out.data(), v.data(), out.size());
  return out;
}

// Numbers up to 2^53 as JSON numbers, larger ones as decimal strings (exact in any JSON reader).
nlohmann::json exact_u64_array(const std::vector<std::uint64_t>& v);

// {rows, cols, dtype, data, provenance}.
nlohmann::json image_json(const Image<std::uint64_t>& img);
nlohmann::json image_json(const Image<std::int64_t>& img);  // beyond +-2^53 as decimal strings
nlohmann::json image_json(const Image<float>& img);  // non-finite values as null
nlohmann::json image_json(const Image<double>& img);  // non-finite values as null

// PNG as bytes (a palette PNG for at most 256 colours, e.g. any colormapped picture; else RGB when every pixel is
// opaque, else RGBA; 8 bits per channel). InvalidArgument for an empty or
// inconsistent picture.
std::string png_bytes(const display::Rgba& img);
// The same picture from its colormap indices (display::render_indexed) and the map: a palette PNG of the map's 256
// colours, no per-pixel colour lookup; InvalidArgument when some pixel is transparent (render those).
std::string png_bytes(const display::Indexed& img, const display::Lut& lut);

}  // namespace qgpu::remote
