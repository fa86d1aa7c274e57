#pragma once
// DECTRIS SIMPLON stream V1: ZeroMQ multipart messages of JSON parts (LiberTEM-rs libertem_dectris; ../shared/LIVE.md).
//   series header: {"htype":"dheader-1.0","series":N,"header_detail":...}, the detector config JSON, and with
//     header_detail "all" pairs of {"htype":"dflatfield-1.0"|"dpixelmask-1.0"|"dcountrate_table-1.0",...} + blob;
//   image: {"htype":"dimage-1.0","series":N,"frame":i,"hash":...}, {"htype":"dimage_d-1.0","shape":[x,y],
//     "type":"uint16","encoding":"bs16-lz4<"|"bs32-lz4<"|"bs8-lz4<"|"lz4<"|"<","size":n}, the blob,
//     {"htype":"dconfig-1.0",...} (and an optional appendix);
//   series end: {"htype":"dseries_end-1.0","series":N}.
// Shapes are [width, height]. bs*-lz4 blobs are exactly HDF5 bitshuffle/LZ4 chunks.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "live/series.hpp"

namespace qgpu::live::stream1 {

struct Part {
  const std::uint8_t* data = nullptr;
  std::size_t size = 0;
};

enum class Kind { header, image, end };

struct Message {
  Kind kind = Kind::end;
  std::uint64_t series = 0;
  SeriesInfo start;  // header: sizes, dtype, frames (from ntrigger/nimages/trigger_mode), pixel mask, energy
  // image:
  std::uint64_t frame = 0;
  std::size_t rows = 0, cols = 0;
  DType dtype = DType::u16;
  std::string encoding;  // "bs16-lz4<", ..., "lz4<", "<" (plain)
  Part blob;
};

// Decodes one multipart message. FormatError naming the part and field on anything malformed.
Message decode(const std::vector<Part>& parts);

// Encoders for the simulator and the tests: each returns the parts of one multipart message.
std::vector<std::vector<std::uint8_t>> encode_header(std::uint64_t series, const SeriesInfo& info,
                                                     double incident_energy_ev);
// blob: a bitshuffle+LZ4 chunk (encoding "bs<8*elem>-lz4<") or the plain little-endian frame ("<").
std::vector<std::vector<std::uint8_t>> encode_image(std::uint64_t series, std::uint64_t frame, std::size_t rows,
                                                    std::size_t cols, DType dtype, const std::string& encoding,
                                                    const std::uint8_t* blob, std::size_t size);
std::vector<std::vector<std::uint8_t>> encode_end(std::uint64_t series);

}  // namespace qgpu::live::stream1
