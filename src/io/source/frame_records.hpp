#pragma once
// Where the frames of a format without a chunk index lie: runs of equally spaced records of equal size, one run per
// file or per block of consecutive frames (a .npy or raw file is one run, a Merlin acquisition one per .mib file).
#include <cstdint>
#include <string>
#include <vector>

namespace qgpu::io {

struct RecordRun {
  std::uint32_t file = 0;          // index into FrameRecords::files
  std::uint64_t first_frame = 0;   // flat scan index of the run's first frame
  std::uint64_t frames = 0;        // frames in the run
  std::uint64_t offset = 0;        // byte offset of the first record in the file
  std::uint64_t stride = 0;        // bytes from one record's start to the next (>= bytes)
  std::uint64_t bytes = 0;         // stored bytes of one record
};

struct FrameRecords {
  std::vector<std::string> files;
  std::vector<RecordRun> runs;     // in frame order, covering frames 0 .. total - 1 without gaps
  bool empty() const { return runs.empty(); }
};

}  // namespace qgpu::io
