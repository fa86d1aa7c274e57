#pragma once
// Reads batches of coalesced runs with several threads of pread into one buffer (pinned for the GPU path).
#include <cstdint>
#include <string>
#include <vector>

#include "io/hdf5/read/read_batches.hpp"

namespace qgpu::io {

class ParallelReader {
 public:
  // Opens every file read-only; direct = O_DIRECT (unbuffered, for cold reads from disk; needs 4096-aligned runs
  // and buffers). threads 0 = one per hardware thread. IoError naming the file when it cannot be opened.
  ParallelReader(const std::vector<std::string>& files, bool direct, unsigned threads);
  ~ParallelReader();
  ParallelReader(const ParallelReader&) = delete;
  ParallelReader& operator=(const ParallelReader&) = delete;

  // Reads every run of the batch into dst (ReadBatch::buffer_bytes bytes). IoError on a read error,
  // FormatError when a file ends before a run's needed bytes (truncated file).
  void read(const ReadBatch& batch, std::uint8_t* dst) const;

  unsigned threads() const { return threads_; }
  bool direct() const { return direct_; }
  static constexpr std::uint64_t kDirectAlign = 4096;

 private:
  std::vector<std::string> files_;
  std::vector<int> fds_;
  bool direct_ = false;
  unsigned threads_ = 1;
};

}  // namespace qgpu::io
