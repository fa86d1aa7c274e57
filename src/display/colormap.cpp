#include "display/colormap.hpp"

#include "core/error.hpp"
#include "display/colormap_tables.hpp"

namespace qgpu::display {

namespace {

Lut from_rgb(const tables::RgbTable& t) {
  Lut lut{};
  for (std::size_t i = 0; i < 256; ++i) {
    for (std::size_t c = 0; c < 3; ++c) lut[4 * i + c] = t[i][c];
    lut[4 * i + 3] = 255;
  }
  return lut;
}

Lut gray() {
  Lut lut{};
  for (std::size_t i = 0; i < 256; ++i) {
    for (std::size_t c = 0; c < 3; ++c) lut[4 * i + c] = static_cast<std::uint8_t>(i);
    lut[4 * i + 3] = 255;
  }
  return lut;
}

}  // namespace

std::vector<std::string> colormap_names() { return {"viridis", "magma", "inferno", "plasma", "gray", "RdBu_r"}; }

const Lut& colormap(const std::string& name) {
  // Built once on first use (function-local statics are thread-safe).
  static const Lut viridis = from_rgb(tables::kViridis);
  static const Lut magma = from_rgb(tables::kMagma);
  static const Lut inferno = from_rgb(tables::kInferno);
  static const Lut plasma = from_rgb(tables::kPlasma);
  static const Lut gray_lut = gray();
  static const Lut rdbu_r = from_rgb(tables::kRdBuR);
  if (name == "viridis") return viridis;
  if (name == "magma") return magma;
  if (name == "inferno") return inferno;
  if (name == "plasma") return plasma;
  if (name == "gray") return gray_lut;
  if (name == "RdBu_r") return rdbu_r;
  std::string known;
  for (const std::string& n : colormap_names()) known += (known.empty() ? "" : ", ") + n;
  throw InvalidArgument("unknown colormap '" + name + "' (expected one of " + known + ")");
}

}  // namespace qgpu::display
