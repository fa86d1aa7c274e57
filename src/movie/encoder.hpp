#pragma once
// Video files from RGBA frames (host side; private to the movie domain).
//   mp4: H.264 (libx264, or h264_nvenc when asked for or when `auto` finds it working), yuv420p; the frame is
//        padded to even width/height by repeating its last column/row (4:2:0 needs even sizes).
//   gif: the GIF encoder on PAL8 frames; the palette is the colormap's 256 colours, so frames drawn from the map
//        (nearest resize, label) are exact; other colours (area-resize blends, transparent black) take the nearest
//        palette colour (squared RGB distance, lowest index on ties). Loops forever.
// Alpha is dropped in both.
// The encoding itself lives in the FFmpeg plugin (ffmpeg/encoder_ffmpeg.cpp, built as libquantem_gpu_movie.so
// beside libquantem_gpu.so): the library loads it on the first movie, so nothing else needs the FFmpeg libraries
// installed, and a machine without them gets BackendUnavailable naming what is missing.
#include <cstddef>
#include <cstdint>
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
  virtual ~Encoder() = default;
  virtual void add(const display::Rgba& frame) = 0;  // must be rows x cols as opened
  virtual void finish() = 0;                         // flushes and writes the trailer
  virtual const std::string& encoder_name() const = 0;
  virtual std::size_t rows() const = 0;  // encoded size (mp4: even)
  virtual std::size_t cols() const = 0;
};

// encoder: "auto", "libx264", "h264_nvenc" (mp4) or "auto", "gif" (gif). InvalidArgument for a bad size, fps or
// encoder name; BackendUnavailable when the FFmpeg plugin does not load or the named encoder is missing or does not
// open; IoError when the file cannot be created.
std::unique_ptr<Encoder> open_encoder(const std::string& path, std::size_t rows, std::size_t cols, unsigned fps,
                                      const display::Lut& palette, const std::string& encoder);

// Index of the palette colour nearest to (r, g, b); exact colours map to their first index.
int nearest_palette_index(const display::Lut& palette, std::uint8_t r, std::uint8_t g, std::uint8_t b);

// True when the plugin loads, libavcodec has h264_nvenc and it opens here (cached).
bool h264_nvenc_opens();

namespace detail {
// What the plugin exports (as `qgpu_movie_plugin`), checked by its ABI number: both halves come from one build.
struct Plugin {
  int abi;
  std::unique_ptr<Encoder> (*open)(const std::string& path, Container container, std::size_t rows, std::size_t cols,
                                   unsigned fps, const display::Lut& palette, const std::string& name);
  bool (*nvenc_opens)();
};
inline constexpr int kPluginAbi = 1;
}  // namespace detail

}  // namespace qgpu::movie
