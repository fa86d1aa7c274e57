#pragma once
// Writing Merlin acquisitions (.mib frames with the real header layout, and the .hdr beside them): for the
// sample writer (`qgpu sample --format mib`, io/sample), the tests and the fuzz seeds. The frames' pixels come
// from the caller; the headers are what a Merlin 0.77 writes (MQ1 fields, one DAC block per chip, MQ1A).
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "io/merlin/mib_header.hpp"

namespace qgpu::io::merlin {

struct MibWriteSpec {
  std::uint32_t counter_depth = 12;  // 1, 6, 12 or 24
  bool quad = false;                 // 2x2 quad (4 chips) instead of one chip
  bool raw = false;                  // R64 raw readout instead of binary
  bool gap = false;                  // quad only: the 2x2G layout (514x514 frames with a 2-pixel gap cross)
  std::uint32_t rows = 256, cols = 256;  // decoded frame: single binary any (ROI), raw single whole raw groups,
                                         // quad 2s x 2s (+2 with gap), chip side s
  std::uint64_t exposure_ns = 1000000;
};

// The header of frame `sequence` (1-based) of such an acquisition, and the pixel format it gives (checked by the
// reader's own pixel_format: a spec the reader would refuse raises InvalidArgument).
FrameHeader writer_header(const MibWriteSpec& spec, std::uint64_t sequence);
PixelFormat writer_format(const MibWriteSpec& spec);

// The header as bytes: exactly h.header_bytes, text then NUL padding (FormatError-free by construction; throws
// InvalidArgument if the text does not fit).
std::string format_frame_header(const FrameHeader& h);

// A .hdr for an acquisition of `frames` frames, `frames_per_trigger` per trigger (0: not stated), optional
// ScanX/ScanY (0: absent), extra "Key", "value" lines before "End"; CRLF lines, padded with spaces to 2048 bytes
// like the detector's.
std::string format_acquisition_header(const MibWriteSpec& spec, std::uint64_t frames, std::uint64_t frames_per_trigger,
                                      std::uint64_t scan_x = 0, std::uint64_t scan_y = 0,
                                      const std::vector<std::pair<std::string, std::string>>& extra = {});

// Writes frames [0, frames) split over `files` .mib files (0 or 1: one file at `path`; N > 1: <stem>_000001.mib
// ... beside `path`, consecutive frames, sequence numbers continuing across files) and the .hdr at
// <stem>.hdr (frames per trigger = scan_cols). fill(first, count, out) writes `count` decoded frames (rows x cols
// of the format's dtype) starting at frame `first`. Returns the files written, the .hdr last.
using FrameFill = std::function<void(std::uint64_t first, std::uint64_t count, void* out)>;
std::vector<std::string> write_mib_acquisition(const std::string& path, const MibWriteSpec& spec,
                                               std::uint64_t scan_rows, std::uint64_t scan_cols, std::size_t files,
                                               const FrameFill& fill,
                                               const std::function<void(double)>& progress = {});

}  // namespace qgpu::io::merlin
