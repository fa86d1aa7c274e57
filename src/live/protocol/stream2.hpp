#pragma once
// DECTRIS SIMPLON stream V2: single-part CBOR messages (RFC 8949) opened by the self-describe tag, a map whose
// "type" is start | image | end (dectris/documentation stream_v2/README.md; ../shared/LIVE.md). Images are RFC 8746
// multi-dimensional arrays [[rows, cols], typed array]; a typed array (tags 64..87) holds a byte string or the
// DECTRIS compression tag 56500 ["bslz4" | "lz4", element size, bytes], whose bytes are the HDF5 bitshuffle/LZ4
// framing (12-byte header: u64 BE decoded size, u32 BE block bytes). Decoding never copies the pixels.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "live/series.hpp"

namespace qgpu::live::stream2 {

enum class Kind { start, image, end };

struct Image {
  std::uint64_t image_id = 0;
  std::string channel;
  std::size_t rows = 0, cols = 0;
  DType dtype = DType::u16;
  std::string compression;         // "" (plain little-endian), "bslz4", "lz4"
  const std::uint8_t* data = nullptr;  // the typed array's bytes (compressed: the HDF5 framing)
  std::size_t size = 0;
};

struct Message {
  Kind kind = Kind::end;
  std::uint64_t series_id = 0;
  std::string series_unique_id;
  SeriesInfo start;  // kind start: protocol, sizes, dtype, frames, pixel mask, energy, metadata
  Image image;       // kind image
};

// Decodes one message. `channel`: the image channel to take ("" = the first the image lists). FormatError naming the
// field on anything malformed or unsupported (a float or signed image dtype, a channel not in the image).
Message decode(const std::uint8_t* data, std::size_t size, const std::string& channel = "");
// The same into `msg`, reused from message to message (the receivers' path: an image allocates nothing for it).
// msg.start is set only by a start message (else it keeps what it held); on FormatError msg is unspecified.
void decode(const std::uint8_t* data, std::size_t size, const std::string& channel, Message& msg);

// Encoders for the simulator and the tests (the same subset the detector sends).
std::vector<std::uint8_t> encode_start(std::uint64_t series_id, const SeriesInfo& info, double incident_energy_ev,
                                       const std::vector<std::uint32_t>& pixel_mask);  // mask: rows*cols or empty
// chunk: a bitshuffle+LZ4 chunk (compression "bslz4") or the plain little-endian frame ("").
std::vector<std::uint8_t> encode_image(std::uint64_t series_id, std::uint64_t image_id, std::size_t rows,
                                       std::size_t cols, DType dtype, const std::string& compression,
                                       const std::uint8_t* chunk, std::size_t size);
std::vector<std::uint8_t> encode_end(std::uint64_t series_id);

}  // namespace qgpu::live::stream2
