#pragma once
// Raw 8-bit RGB tables of the matplotlib perceptual colormaps and the diverging RdBu_r (defined in colormap_tables.cpp).
#include <array>
#include <cstdint>

namespace qgpu::display::tables {

using RgbTable = std::array<std::array<std::uint8_t, 3>, 256>;

extern const RgbTable kViridis;
extern const RgbTable kMagma;
extern const RgbTable kInferno;
extern const RgbTable kPlasma;
extern const RgbTable kRdBuR;  // diverging: blue (low) - white - red (high)

}  // namespace qgpu::display::tables
