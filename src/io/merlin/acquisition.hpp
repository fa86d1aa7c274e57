#pragma once
// A Merlin acquisition on disk: its .mib files, every frame's payload position in acquisition order, the pixel
// format, the scan shape and how it was decided, and the metadata (frame headers and .hdr). The loader reads the
// payloads (fixed-size records, no compression) and decodes them with decode_frame_host / decode_mib_frames.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "io/merlin/mib_header.hpp"
#include "io/merlin/pixel_format.hpp"

namespace qgpu::io::merlin {

struct MerlinFrame {
  std::uint32_t file = 0;    // index into MerlinAcquisition::files
  std::uint64_t offset = 0;  // payload start in that file (after the frame header)
};

enum class ScanShapeFrom {
  given,               // scan_rows x scan_cols of the caller
  given_row_length,    // scan_cols of the caller (scan_rows = 0): rows = frames / scan_cols
  hdr_scan_xy,         // the .hdr's ScanY x ScanX
  frames_per_trigger,  // frames / (.hdr Frames per Trigger) rows of Frames per Trigger (one trigger per scan row)
  single_frame,        // one frame: 1 x 1
  undetermined,        // none of these: the caller must give a scan shape (require_scan_shape())
};
const char* scan_shape_from_name(ScanShapeFrom s);

struct MerlinOptions {
  std::size_t scan_rows = 0, scan_cols = 0;  // 0, 0: from the .hdr; 0, C: rows of C frames
  bool single_file = false;  // only the named .mib, no sibling files (its sequence numbers may start above 1)
  // true: every frame header is read and checked (sequence number, size, format) while scanning. false: only the
  // first and last header of each file; the loader then checks the others as it reads them (verify_frame_header).
  bool every_header = true;
};

struct MerlinAcquisition {
  std::vector<std::string> files;               // .mib files, in acquisition order (by sequence number)
  std::vector<std::uint64_t> file_frames;       // whole frames in each file
  std::vector<MerlinFrame> frames;              // the frames of the scan, in acquisition order (cut to whole rows)
  std::uint64_t frames_found = 0;               // frames in the files (>= frames.size())
  std::uint64_t first_sequence = 1;             // sequence number of frames[0] (1 unless one file opened alone)
  std::uint32_t header_bytes = 0;               // frame header size (every frame)
  std::uint64_t frame_bytes = 0;                // header + payload: one record
  std::string header_shape;                     // fields 2-7 of the first header as text (verify_frame_header)
  PixelFormat format;
  std::size_t scan_rows = 0, scan_cols = 0;     // 0 x 0 when undetermined
  ScanShapeFrom scan_from = ScanShapeFrom::undetermined;
  std::string hdr_file;                         // the .hdr read, or empty
  std::vector<std::string> warnings;            // e.g. an interrupted scan cut to whole rows
  nlohmann::json metadata;                      // reader, files, headers, .hdr keys, thresholds, exposure, times

  bool has_scan_shape() const { return scan_from != ScanShapeFrom::undetermined; }
  // InvalidArgument asking for a scan shape (naming the frame count and what was looked at) when undetermined.
  void require_scan_shape() const;
};

// Opens a Merlin acquisition from one of its .mib files or its .hdr (recognised by content: "MQ1," / "HDR,").
// Sibling files: from <prefix><digits>.mib every <prefix><digits>.mib of the folder; from <stem>.hdr the files
// <stem>.mib and <stem>[_-]<digits>.mib. The .hdr beside a .mib (<stem>.hdr, else <prefix>.hdr, else <prefix>
// without a trailing '_' or '-') is read when present. Errors: IoError (missing/unreadable file), FormatError naming
// the file, frame and field (malformed header, a file that is not whole frames, frames of different sizes or
// formats, duplicate or missing sequence numbers, a .hdr that disagrees), InvalidArgument (a scan shape that does
// not fit the frames).
MerlinAcquisition scan_merlin(const std::string& path, const MerlinOptions& options);
MerlinAcquisition scan_merlin(const std::string& path, std::size_t scan_rows = 0, std::size_t scan_cols = 0);

// Checks the header bytes of frame k (acquisition order, header_bytes of them, read by the loader just before the
// payload): starts with MQ1, has the expected sequence number (first_sequence + k) and the first frame's fields 2-7
// (header size, chips, width, height, pixel type, layout). FormatError naming the file and frame otherwise. Cheap
// (no full parse).
void verify_frame_header(const MerlinAcquisition& acq, std::size_t k, const std::uint8_t* header);

}  // namespace qgpu::io::merlin
