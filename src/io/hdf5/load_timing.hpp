#pragma once
// Stage timings of a load (seconds), reported in the provenance and by `qgpu info --timing`.
#include <chrono>
#include <cstdint>

#include <nlohmann/json.hpp>

namespace qgpu::io {

struct LoadTiming {
  double index = 0;   // reading the chunk indexes of every part (during inspect) and locating the frames' chunks
  double index_parse = 0;   // of which: parsing the chunk indexes (inspect)
  double index_locate = 0;  // of which: locating every loaded frame's chunk in them (plan_reads)
  double setup = 0;   // allocating the output (zero-filled on the host) and the pinned/device read buffers
  double read = 0;    // host wall time in parallel preads
  double copy = 0;    // host-to-device copies (GPU time; cuda only)
  double decode = 0;  // decode (+ crop/bin) (GPU time on cuda, host wall time on cpu)
  double wait = 0;    // host waiting for the GPU after the last batch was queued (encoded: and for the encoder)
  double release = 0; // freeing the load's own device buffers (cuda; cudaFree waits for the device)
  double total = 0;
  std::size_t batches = 0;
  std::uint64_t bytes_read = 0;     // bytes read from the files (chunks and the gaps read through)
  std::uint64_t chunk_bytes = 0;    // stored bytes of the chunks
  std::uint64_t decoded_bytes = 0;  // frames decoded x frame bytes
  unsigned read_threads = 0;
  bool direct_io = false;

  nlohmann::json to_json() const {
    return {{"index_s", index},         {"index_parse_s", index_parse}, {"index_locate_s", index_locate},
            {"setup_s", setup},       {"read_s", read},
            {"copy_s", copy},           {"decode_s", decode},
            {"wait_s", wait},           {"release_s", release},     {"total_s", total},
            {"batches", batches},       {"bytes_read", bytes_read},
            {"chunk_bytes", chunk_bytes}, {"decoded_bytes", decoded_bytes},
            {"read_threads", read_threads}, {"direct_io", direct_io},
            {"decoded_GBps", total > 0 ? double(decoded_bytes) / total / 1e9 : 0.0}};
  }
};

inline double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace qgpu::io
