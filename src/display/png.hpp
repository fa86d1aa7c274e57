#pragma once
// PNG output (libpng, 8 bits per channel, no interlace).
#include <cstdint>
#include <string>

#include "core/image.hpp"
#include "display/results.hpp"

namespace qgpu::display {

// RGBA, 8 bits per channel. Raises InvalidArgument for an empty or inconsistent image and IoError naming the
// path when the file cannot be written (a partly written file is removed).
void write_png(const std::string& path, const Rgba& img);

// Grayscale, 8 bits.
void write_png_gray(const std::string& path, const Image<std::uint8_t>& img);

}  // namespace qgpu::display
