#pragma once
// Reader of MRC files (MRC2014: Thermo Fisher Velox 4D, Direct Electron movies): a 1024-byte header, an extended
// header of NEXT bytes, then NZ frames of NY rows x NX columns (NX varies fastest), one record run. Recognised by
// "MAP " at byte 208 (files without it only with format "mrc"). Modes 0 int8, 1 int16, 2 float32, 6 uint16; the
// machine stamp at 212 gives the byte order (0x44 0x44 / 0x44 0x41 little, 0x11 0x11 big, zeros: little assumed).
// Scan shape: given; the Direct Electron sidecar <id>_info.txt beside <id>_movie.mrc (Scan - Size Y x Scan - Size X,
// a plain raster only: a <id>_scan_coordinates.csv that is not one is refused); a square frame count.
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "io/source/readers.hpp"

namespace qgpu::io::mrc {

constexpr std::size_t kHeaderBytes = 1024;

struct MrcHeader {
  std::int32_t nx = 0, ny = 0, nz = 0, mode = 0, next = 0;
  std::string exttyp;                // the 4 bytes at 104 when printable ("FEI1", "FEI2", "CCP4", ...), else ""
  bool has_map = false;              // "MAP " at 208
  bool big_endian = false;
  std::string machine_stamp;         // e.g. "0x44 0x44"
  std::uint64_t data_offset = 0;     // 1024 + NEXT
  std::uint64_t frame_bytes = 0, data_bytes = 0;
  DType dtype = DType::u16;
};

// The name of a MODE ("int8", "int16", "float32", "uint16", "complex int16", ..., "unknown").
std::string mode_name(std::int32_t mode);

// Parses and checks the header (n >= 1024 bytes of it) against the file's size: FormatError naming `where` and the
// field for negative or zero dimensions, NEXT negative or past the end, data beyond the end; DTypeError naming a mode
// other than 0, 1, 2, 6.
MrcHeader parse_header(const std::uint8_t* head, std::size_t n, std::uint64_t file_bytes, const std::string& where);

bool is_mrc_head(const std::uint8_t* head, std::size_t n);
FileInfo inspect_mrc(const std::string& path, const SourceOptions& options);

// A Direct Electron <id>_info.txt: "key = value" lines (keys and values trimmed).
std::map<std::string, std::string> read_de_info(const std::string& path);

// The positions of a DE scan-coordinates csv ("x,y" per line, as rosettasciio reads them); FormatError naming the
// csv and the line for anything else.
std::vector<std::pair<long long, long long>> read_scan_coordinates(const std::string& path);

}  // namespace qgpu::io::mrc
