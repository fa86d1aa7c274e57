#pragma once
// Colormaps as 256-entry RGBA lookup tables: colour index i (0..255, see scaling.hpp) -> lut[4i .. 4i+3].
#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace qgpu::display {

using Lut = std::array<std::uint8_t, 256 * 4>;

// "viridis", "magma", "inferno", "plasma" (matplotlib tables), "gray" (i -> (i, i, i)) or the diverging "RdBu_r"
// (blue - white - red, for signed maps shown with a range symmetric about 0); alpha is 255.
// Raises InvalidArgument naming the known maps for any other name.
const Lut& colormap(const std::string& name);

std::vector<std::string> colormap_names();

}  // namespace qgpu::display
