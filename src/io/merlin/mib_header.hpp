#pragma once
// Merlin (Quantum Detectors) headers: the ASCII header before every frame of a .mib file ("MQ1,...") and the
// acquisition header (.hdr, "HDR,", Key:\tvalue lines). Byte-level facts: docs/design.md ("Merlin .mib").
//
// Every field is checked: anything malformed (unknown pixel type, layout or counter depth, a header size that
// disagrees with the header's text, a size product that overflows) raises FormatError naming the file, the frame
// and the field; a known but unsupported form (U64 pixels, raw Nx1) raises DTypeError / FormatError saying so.
// The parsers read only the bytes they are given (fuzzed: tests/fuzz/fuzz_merlin_header.cpp).
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "io/merlin/pixel_format.hpp"

namespace qgpu::io::merlin {

// Content recognition: a .mib starts with "MQ1," (its first frame header), a .hdr with "HDR,".
bool looks_like_mib(const std::uint8_t* head, std::size_t n);
bool looks_like_hdr(const std::uint8_t* head, std::size_t n);

// Largest frame header accepted (the real ones: 384 bytes single chip, 768 quad) and largest .hdr (real: 2 KiB).
inline constexpr std::size_t kMaxFrameHeaderBytes = 65536;
inline constexpr std::size_t kMaxHdrBytes = std::size_t(1) << 20;

// Where a header lies, for error messages: "'<file>' frame <frame> (byte <offset>)"; frame counts from 0 in the file.
struct Where {
  std::string file;
  std::uint64_t frame = 0;
  std::uint64_t offset = 0;
  std::string text() const;
};

// One frame header, fields by index (docs/design.md): 0 "MQ1", 1 sequence, 2 header bytes, 3 chips, 4 width,
// 5 height, 6 pixel type, 7 layout, 8 chip select (hex), 9 timestamp, 10 shutter (s), 11 counter, 12 colour mode,
// 13 gain mode, then thresholds (keV), one DAC block per chip ("3RX", values) and the extension "MQ1A" (ISO
// timestamp with ns, "<N>ns" exposure, counter depth).
struct FrameHeader {
  std::uint64_t sequence = 0;    // 1-based, orders the frames of an acquisition
  std::uint32_t header_bytes = 0;
  std::uint32_t chips = 0;
  std::uint32_t width = 0, height = 0;  // as stored (raw quad: 1024 x 256)
  PixelType pixel_type = PixelType::U08;
  Layout layout = Layout::L1x1;
  std::uint32_t layout_n = 1;    // N of an "Nx1" layout written with a digit (0: the letter N)
  std::uint32_t chip_select = 0;
  std::string timestamp;         // "YYYY-MM-DD hh:mm:ss.ffffff"
  double shutter_s = 0;
  std::int64_t counter = 0, colour_mode = 0, gain_mode = 0;
  std::vector<double> thresholds_kev;
  std::uint32_t dac_blocks = 0;  // per-chip DAC blocks ("3RX,...")
  std::string chip_type;         // the DAC blocks' marker, e.g. "3RX"
  bool mq1a = false;             // extension present
  std::string timestamp_ns;      // MQ1A ISO timestamp, e.g. "2021-04-15T13:44:43.100924481Z"
  std::uint64_t exposure_ns = 0;
  std::uint32_t counter_depth = 0;  // MQ1A: 1, 6, 12 or 24; 0 = no extension
};

// Parses the frame header at data[0, n): n may hold more (the payload); the header's own size field says where it
// ends. FormatError when n is shorter than that size (truncated), or on any malformed field.
FrameHeader parse_frame_header(const std::uint8_t* data, std::size_t n, const Where& where);

// The pixel format a header describes. hdr_counter_depth: the .hdr's "Counter Depth" (0 = none), needed for raw
// frames without MQ1A. Checks the pixel type against the counter depth, the layout against the chip count, raw
// geometry, and that the payload size does not overflow.
PixelFormat pixel_format(const FrameHeader& h, std::uint32_t hdr_counter_depth, const Where& where);

// The acquisition header (.hdr): every "Key:\tvalue" line up to "End", plus the values the reader uses.
struct AcquisitionHeader {
  std::vector<std::pair<std::string, std::string>> entries;  // in file order; key without ':', value as UTF-8
  std::optional<std::uint64_t> frames_in_acquisition;  // "Frames in Acquisition (Number)"; 0 = not stated
  std::optional<std::uint64_t> frames_per_trigger;     // "Frames per Trigger (Number)"; 0 = not stated
  std::optional<std::uint64_t> scan_x, scan_y;         // "ScanX", "ScanY" (both or neither)
  std::uint32_t counter_depth = 0;                     // "Counter Depth (number)": 1, 6, 12, 24; 0 = absent
  std::string assembly_size;                           // "Assembly Size (NX1, 2X2)", trimmed
  std::string gap_fill_mode, software_version;
  // The value of a key, or nullptr.
  const std::string* find(const std::string& key) const;
};

// Parses a .hdr held in data[0, n) (at most kMaxHdrBytes). FormatError naming the file and the line on a line
// that is not "Key:\tvalue", on a non-number where a number belongs, on a counter depth other than 1/6/12/24, or
// when only one of ScanX and ScanY is given.
AcquisitionHeader parse_acquisition_header(const std::uint8_t* data, std::size_t n, const std::string& file);

}  // namespace qgpu::io::merlin
