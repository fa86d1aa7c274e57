#pragma once
// What a live stream hands the acquisition: a series start (the frames' shape, dtype and codec, and the metadata the
// detector sends), frames (stored bytes + index, exactly the records a file reader would name), and a series end.
// Every receiver (DECTRIS stream V2/V1, Merlin TCP) speaks to the one Sink below.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/dtype.hpp"
#include "io/source/frame_codec.hpp"

namespace qgpu::live {

struct SeriesInfo {
  std::string protocol;            // "dectris-v2" | "dectris-v1" | "merlin"
  std::string series_id;           // as the detector names it
  std::size_t det_rows = 0, det_cols = 0;
  DType dtype = DType::u16;        // decoded frame dtype
  io::FrameCodec codec;            // bitshuffle (bslz4 chunks), plain (little-endian), merlin (MQ1 payloads)
  std::size_t block_elems = 0;     // bitshuffle: block size in elements (0 = read from the first frame's header)
  std::uint64_t frames = 0;        // frames the detector announced (0 = unknown)
  std::size_t scan_rows = 0, scan_cols = 0;  // scan shape the stream states (0 = none)
  std::string scan_shape_source;   // where it was read
  std::vector<std::uint32_t> bad_pixels;  // the detector's pixel mask (flat indices, ascending)
  std::string pixel_mask_source;
  nlohmann::json calibration = nlohmann::json::object();         // {key: value} (io/calibration.hpp keys)
  nlohmann::json calibration_detail = nlohmann::json::object();  // {key: {value, unit, source}}
  nlohmann::json metadata = nlohmann::json::object();            // the start message's other fields
  std::size_t frame_bytes() const { return det_rows * det_cols * dtype_size(dtype); }
};

// One received frame: its stored bytes (valid only during the call) and its index in the series (from 0).
// kind: how its bytes decode (a stream may say so per frame: the first frame of a series fixes it for the series).
struct FrameView {
  std::uint64_t index = 0;
  const std::uint8_t* data = nullptr;
  std::size_t size = 0;
  io::FrameCodecKind kind = io::FrameCodecKind::bitshuffle;
};

class Sink {
 public:
  virtual ~Sink() = default;
  virtual void series_start(const SeriesInfo& info) = 0;
  // A frame of the current series: the sink copies what it keeps and returns quickly.
  virtual void frame(const FrameView& f) = 0;
  // The current series ended: reason "" = its end message; else why it was cut ("restart: a new series began",
  // "disconnected", "stopped").
  virtual void series_end(const std::string& series_id, const std::string& reason) = 0;
  // A message named and skipped (malformed message, stale end, frame of no series); the stream goes on.
  virtual void problem(const std::string& what) = 0;
};

}  // namespace qgpu::live
