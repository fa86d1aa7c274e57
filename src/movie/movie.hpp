#pragma once
// Movies (MP4 / GIF) of a loaded dataset: a sequence of frames, each a product of the existing query API rendered
// to RGBA by display::render on the dataset's backend (cuda: detector + display kernels; cpu: the reference), then
// resized, labelled and encoded on the host through the FFmpeg libraries (a plugin loaded on the first movie).
//
// Sequences:
//   bf_sweep     BF disk radius from start to stop (frames values, evenly spaced, both ends included)
//   adf_sweep    ADF inner radius from start to stop; outer = inner + adf_width, or the fixed adf_outer, or
//                (neither given) the detector corner distance from the centre (everything outside the inner radius)
//   path_row     the diffraction frames of scan row `row`, column by column
//   path_line    the diffraction frames at `frames` scan positions evenly spaced on the segment (r0,c0)-(r1,c1),
//                each rounded half up to the nearest scan position (default: max(|r1-r0|, |c1-c0|) + 1 positions)
//   ssb_defocus  SSB phase (full reconstruction) with the defocus C1 from start to stop (angstrom); other SSB
//                parameters from the file's calibration (ssb::params_from_metadata)
// Each frame's display range comes from its own percentiles (DisplayOptions).
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/provenance.hpp"
#include "display/options.hpp"
#include "display/results.hpp"
#include "resident/dataset.hpp"

namespace qgpu::movie {

enum class Sequence { bf_sweep, adf_sweep, path_row, path_line, ssb_defocus };
std::string sequence_name(Sequence s);
Sequence sequence_from_name(const std::string& name);  // InvalidArgument naming the known ones

enum class Resize { nearest, area };
Resize resize_from_name(const std::string& name);

struct MovieSpec {
  Sequence sequence = Sequence::adf_sweep;
  double start = 0, stop = 0;                 // sweep range (radius px, or C1 angstrom); start <= stop
  // Number of frames (1..100000); unset: sweeps 30, path_row every column, path_line max(|dr|, |dc|) + 1.
  std::optional<std::size_t> frames;
  std::optional<double> adf_width, adf_outer; // adf_sweep: at most one
  std::optional<std::pair<double, double>> center;  // detector (row, col); default: the fitted BF disk centre
  std::size_t row = 0;                        // path_row
  std::size_t line[4] = {0, 0, 0, 0};         // path_line: r0 c0 r1 c1
  display::DisplayOptions look;               // colormap, scale, percentiles
  std::size_t width = 0, height = 0;          // output size; 0 0 = the frame's own size
  Resize resize = Resize::area;
  bool label = false;                         // burn the parameter value into the top-left corner
  unsigned fps = 10;                          // 1..60
  std::string encoder = "auto";               // mp4: auto | libx264 | h264_nvenc; gif: auto | gif
};

// Checks everything that needs no dataset (ranges, counts, options, the output's extension and that it can be
// written) and raises InvalidArgument / IoError naming the problem. render() calls it first; front ends call it
// before loading anything.
void validate(const MovieSpec& s, const std::string& out_path);

// One frame of the movie before encoding, and the parameter it shows.
struct Frame {
  display::Rgba rgba;   // final size, label burned in
  std::string label;    // e.g. "ADF 12.0-96.0 px"
  double value = 0;     // the swept parameter (radius, C1) or the flat scan index (paths)
};

// Checks the dataset-dependent parts (scan positions inside the scan, radii positive) and the frame count.
std::size_t frame_count(const Dataset& ds, const MovieSpec& s);

// Renders the frames in order, calling sink for each (no encoding). Used by render() and by the tests.
void render_frames(const Dataset& ds, const MovieSpec& s, const std::function<void(const Frame&)>& sink);

struct MovieResult {
  std::string path;
  std::size_t frames = 0;
  std::size_t width = 0, height = 0;  // encoded size (mp4: rounded up to even by repeating the last row/col)
  std::string encoder;                // libx264, h264_nvenc or gif
  double render_seconds = 0, encode_seconds = 0;
  // As every product: the dataset's, operation movie.<sequence>, output shape (frames, height, width), parameters
  // (sequence, range, each frame's value and label, look, size, fps, encoder).
  Provenance provenance;
};

// Validates, renders every frame and encodes them into out_path (.mp4 or .gif, by extension).
MovieResult render(const Dataset& ds, const std::string& out_path, const MovieSpec& s,
                   const std::function<void(double)>& progress = {});

// True when libavcodec has h264_nvenc and it opens on this machine (an NVENC-capable GPU and driver); cached.
bool nvenc_available();

}  // namespace qgpu::movie
