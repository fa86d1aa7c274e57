#pragma once
// Reads batches of coalesced runs with several threads of pread into one buffer (pinned for the GPU path).
#include <cstdint>
#include <functional>
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
  // The same, in pieces of kStepPieceBytes, calling ready(from, to) once the bytes [0, to) of dst are all read and
  // `to` is at least `step` bytes past the previous call's (or the batch is read): ranges in order that cover
  // [0, buffer_bytes), one call at a time, on any of the reading threads (the GPU load copies each range to the
  // device while the rest is read). An exception from ready stops the read and is rethrown.
  using Ready = std::function<void(std::uint64_t from, std::uint64_t to)>;
  void read(const ReadBatch& batch, std::uint8_t* dst, std::uint64_t step, const Ready& ready) const;
  static constexpr std::uint64_t kStepPieceBytes = std::uint64_t(1) << 20;

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
