#pragma once
// Video files from RGBA frames through the FFmpeg libraries (host side; private to the movie domain).
//   mp4: H.264 (libx264, or h264_nvenc when asked for or when `auto` finds it working), yuv420p; the frame is
//        padded to even width/height by repeating its last column/row (4:2:0 needs even sizes).
//   gif: the GIF encoder on PAL8 frames; the palette is the colormap's 256 colours, so frames drawn from the map
//        (nearest resize, label) are exact; other colours (area-resize blends, transparent black) take the nearest
//        palette colour (squared RGB distance, lowest index on ties). Loops forever.
// Alpha is dropped in both.
#include <cstddef>
#include <memory>
#include <string>

#include "display/colormap.hpp"
#include "display/results.hpp"

namespace qgpu::movie {

enum class Container { mp4, gif };

// By the extension (case-insensitive .mp4 / .gif); InvalidArgument otherwise.
Container container_of(const std::string& path);

class Encoder {
 public:
  // encoder: "auto", "libx264", "h264_nvenc" (mp4) or "auto", "gif" (gif). Raises BackendUnavailable when the
  // named encoder is missing or does not open, IoError when the file cannot be created.
  Encoder(const std::string& path, std::size_t rows, std::size_t cols, unsigned fps, const display::Lut& palette,
          const std::string& encoder);
  ~Encoder();
  Encoder(const Encoder&) = delete;
  Encoder& operator=(const Encoder&) = delete;

  void add(const display::Rgba& frame);  // must be rows x cols
  void finish();                         // flushes and writes the trailer
  const std::string& encoder_name() const;
  std::size_t rows() const;  // encoded size (mp4: even)
  std::size_t cols() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> p_;
};

// Index of the palette colour nearest to (r, g, b); exact colours map to their first index.
int nearest_palette_index(const display::Lut& palette, std::uint8_t r, std::uint8_t g, std::uint8_t b);

bool h264_nvenc_opens();

}  // namespace qgpu::movie
