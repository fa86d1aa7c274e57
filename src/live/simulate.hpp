#pragma once
// A detector simulator for tests and demos: replays a file as a live stream on loopback (or any local address).
//   dectris-v2 / dectris-v1: binds a ZeroMQ PUSH socket (default ports 31001 / 9999) and sends start, every frame,
//     end. An HDF5 file of bitshuffle+LZ4 frames is sent verbatim (the chunks as stored); any other file the
//     source layer reads is encoded to bitshuffle+LZ4 chunks first.
//   merlin: listens on the data port (default 6342), and for each receiver that connects sends the acquisition
//     header and the MQ1 frames: a .mib acquisition verbatim (its .hdr when there is one), any other file encoded
//     as binary 12-bit (uint16 counts < 4096), 6-bit (uint8) or 24-bit (uint32) frames.
// Faults on request, to test the receivers: frames skipped, sent twice, swapped in pairs, corrupted, a stale end
// before the start, a restart mid-series, a Merlin connection closed mid-acquisition.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "live/series.hpp"

namespace qgpu::live {

struct SimulateOptions {
  std::string protocol = "dectris-v2";  // dectris-v2 | dectris-v1 | merlin
  std::string host = "127.0.0.1";
  int port = 0;                          // 0: the protocol's default
  double rate = 0;                       // frames per second (0: as fast as the socket takes them)
  std::size_t repeat = 1;                // series sent (ids 1..repeat)
  std::size_t scan_rows = 0, scan_cols = 0;  // the file's scan shape when it states none
  bool announce_scan_shape = true;       // V2: the scan shape in the start message's user_data
  double connect_timeout_s = 30;         // wait this long for a receiver (ZeroMQ / Merlin)
  // Faults (frame indices of the series).
  std::vector<std::uint64_t> skip, duplicate, corrupt;
  bool swap_pairs = false;               // frames sent 1, 0, 3, 2, ...
  bool stale_end_first = false;          // an end of series 0 before the first start
  std::uint64_t restart_after = 0;       // > 0: after this many frames of series 1 a new series starts (no end)
  std::uint64_t disconnect_after = 0;    // merlin, > 0: the connection closes after this many frames
  std::function<void(const std::string&)> log;
};

struct SimulateReport {
  std::uint64_t frames_sent = 0, bytes_sent = 0;
  double seconds = 0, frames_per_second = 0;
  std::string source;  // "verbatim chunks" | "encoded from <reader>"
};

// The frames of a file as a stream carries them (options.protocol, scan_rows/cols): DECTRIS bitshuffle+LZ4 chunks
// or Merlin MQ1 frames (header + pixels), with what the start message announces.
struct StreamSource {
  SeriesInfo info;
  std::vector<std::vector<std::uint8_t>> frames;
  std::string hdr;            // Merlin: the acquisition header text
  double energy_ev = 300000;  // DECTRIS: incident_energy of the start message
  std::string how;            // "verbatim chunks of hdf5", "encoded (...) from <reader>"
};
StreamSource stream_source(const std::string& file, const SimulateOptions& options);

// Replays `file` (or a source already read); returns when every series was sent (or *stop became true). IoError
// when the address cannot be bound or no receiver came within connect_timeout_s.
SimulateReport simulate_detector(const std::string& file, const SimulateOptions& options,
                                 const std::atomic<bool>* stop = nullptr);
SimulateReport simulate_detector(const StreamSource& source, const SimulateOptions& options,
                                 const std::atomic<bool>* stop = nullptr);

}  // namespace qgpu::live
