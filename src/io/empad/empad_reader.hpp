#pragma once
// Reader of EMPAD (Electron Microscope Pixel Array Detector) acquisitions: an .xml that names a .raw of frames back
// to back, each 130 rows x 128 cols of little-endian float32, the last 2 rows a footer (dropped: the frame is
// 128 x 128; one record run of stride 130*128*4 and 128*128*4 bytes per record). Scan rows x cols from the xml
// (scan_parameters[@mode="acquire"], else mode "search": scan_resolution_y x scan_resolution_x; else pix_y x pix_x),
// else from an EMPAD v1.2.2 raw name scan_x<X>_y<Y>.raw, or given; a series_count stack needs it given (or square).
// The .raw itself is read when named with format "empad" (float32 has no magic bytes): the scan shape is then
// given, in its name, or square. Sources: rosettasciio rsciio/empad, LiberTEM io/dataset/empad.py.
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "io/calibration.hpp"
#include "io/source/readers.hpp"

namespace qgpu::io::empad {

constexpr std::size_t kRawRows = 130, kRows = 128, kCols = 128;
constexpr std::uint64_t kRecordBytes = kRawRows * kCols * 4, kFrameBytes = kRows * kCols * 4;

// One element of a (small) XML document: its name, attributes, text (entities decoded) and children in order.
struct XmlElement {
  std::string name;
  std::map<std::string, std::string> attributes;
  std::string text;
  std::vector<XmlElement> children;
  const XmlElement* child(const std::string& name) const;  // the first child of that name, or nullptr
};

// A tolerant parser for EMPAD's plain XML: declaration, comments, CDATA, elements, attributes, the five named
// entities and numeric character references. A DOCTYPE (entity definitions) is refused. FormatError naming `where`
// and the byte offset for anything malformed (unclosed or mismatched tags, bad attributes, no root element).
XmlElement parse_xml(const std::string& text, const std::string& where);

// What an EMPAD .xml says.
struct EmpadXml {
  std::string raw_file;  // root/raw_file@filename as written
  struct Scan {
    std::size_t rows = 0, cols = 0;
    std::string source;  // e.g. EMPAD xml scan_parameters[@mode="acquire"]/scan_resolution_y x scan_resolution_x
  };
  std::vector<Scan> scans;                    // candidates in order of trust: acquire, search, pix_y x pix_x
  std::optional<std::uint64_t> series_count;  // a stack of images
  nlohmann::json metadata = nlohmann::json::object();
  Calibration calibration;
};

// Parses an EMPAD .xml (root element "root" with raw_file@filename). FormatError naming `where` and the field.
EmpadXml parse_empad_xml(const std::string& text, const std::string& where);

// (rows, cols) = (Y, X) from an EMPAD v1.2.2 raw name "scan_x<X>_y<Y>.raw" (the file name, not the folder); none
// for any other name.
std::optional<std::pair<std::size_t, std::size_t>> scan_shape_from_raw_name(const std::string& path);

bool is_empad_head(const std::uint8_t* head, std::size_t n);
FileInfo inspect_empad(const std::string& path, const SourceOptions& options);

}  // namespace qgpu::io::empad
