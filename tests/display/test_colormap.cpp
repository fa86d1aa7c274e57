#include <gtest/gtest.h>

#include <array>

#include "core/error.hpp"
#include "display/colormap.hpp"

namespace qgpu::display {
namespace {

std::array<int, 4> entry(const std::string& name, std::size_t i) {
  const Lut& lut = colormap(name);
  return {lut[4 * i], lut[4 * i + 1], lut[4 * i + 2], lut[4 * i + 3]};
}

using E = std::array<int, 4>;

TEST(DisplayColormap, ViridisKnownEntries) {
  EXPECT_EQ(entry("viridis", 0), (E{68, 1, 84, 255}));      // #440154
  EXPECT_EQ(entry("viridis", 128), (E{33, 145, 140, 255}));  // #21918c, matplotlib viridis(0.5)
  EXPECT_EQ(entry("viridis", 255), (E{253, 231, 37, 255}));  // #fde725
}

TEST(DisplayColormap, InfernoMagmaPlasmaEndpoints) {
  EXPECT_EQ(entry("inferno", 0), (E{0, 0, 4, 255}));        // #000004
  EXPECT_EQ(entry("inferno", 255), (E{252, 255, 164, 255}));  // #fcffa4
  EXPECT_EQ(entry("magma", 0), (E{0, 0, 4, 255}));          // #000004
  EXPECT_EQ(entry("magma", 255), (E{252, 253, 191, 255}));    // #fcfdbf
  EXPECT_EQ(entry("plasma", 0), (E{13, 8, 135, 255}));      // #0d0887
  EXPECT_EQ(entry("plasma", 255), (E{240, 249, 33, 255}));    // #f0f921
}

TEST(DisplayColormap, RdBuRDiverges) {
  // matplotlib RdBu_r = ColorBrewer RdBu reversed: #053061 (dark blue) .. #f7f7f7 (middle) .. #67001f (dark red)
  EXPECT_EQ(entry("RdBu_r", 0), (E{5, 48, 97, 255}));
  EXPECT_EQ(entry("RdBu_r", 255), (E{103, 0, 31, 255}));
  EXPECT_EQ(entry("RdBu_r", 128), (E{247, 246, 246, 255}));  // x = 128/255: just past the white middle
  // blue below the middle, red above
  for (std::size_t i = 0; i < 120; i += 10) EXPECT_GT(entry("RdBu_r", i)[2], entry("RdBu_r", i)[0]) << i;
  for (std::size_t i = 136; i < 256; i += 10) EXPECT_GT(entry("RdBu_r", i)[0], entry("RdBu_r", i)[2]) << i;
}

TEST(DisplayColormap, GrayIsIdentity) {
  for (int i = 0; i < 256; ++i) EXPECT_EQ(entry("gray", static_cast<std::size_t>(i)), (E{i, i, i, 255})) << i;
}

TEST(DisplayColormap, AllOpaqueAndDistinctNeighbours) {
  for (const std::string& name : colormap_names()) {
    const Lut& lut = colormap(name);
    int identical_neighbours = 0;
    for (std::size_t i = 0; i < 256; ++i) {
      EXPECT_EQ(lut[4 * i + 3], 255) << name << " " << i;
      if (i && lut[4 * i] == lut[4 * i - 4] && lut[4 * i + 1] == lut[4 * i - 3] && lut[4 * i + 2] == lut[4 * i - 2])
        ++identical_neighbours;
    }
    // The 8-bit perceptual maps repeat an entry only occasionally (rounding); a broken table would not.
    EXPECT_LT(identical_neighbours, 8) << name;
  }
}

TEST(DisplayColormap, ViridisLightnessIncreases) {
  // Perceptual maps brighten monotonically; check a luma proxy over coarse steps.
  auto luma = [](const std::array<int, 4>& e) { return 0.299 * e[0] + 0.587 * e[1] + 0.114 * e[2]; };
  for (std::size_t i = 16; i < 256; i += 16) EXPECT_GT(luma(entry("viridis", i)), luma(entry("viridis", i - 16)));
}

TEST(DisplayColormap, UnknownNameRaises) {
  EXPECT_THROW(colormap("jet"), InvalidArgument);
  EXPECT_THROW(colormap(""), InvalidArgument);
  EXPECT_THROW(colormap("Viridis"), InvalidArgument);
}

}  // namespace
}  // namespace qgpu::display
