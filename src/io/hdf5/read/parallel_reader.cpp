#include "io/hdf5/read/parallel_reader.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <exception>
#include <mutex>
#include <thread>

#include "core/error.hpp"
#include "core/thread_pool.hpp"

namespace qgpu::io {

namespace {

constexpr std::uint64_t kPieceBytes = std::uint64_t(4) << 20;  // one pread; runs are split into pieces this size

struct Piece {
  std::uint32_t file;
  std::uint64_t offset, bytes, needed;  // needed: bytes of this piece that must exist in the file
  std::uint64_t dst;
};

}  // namespace

ParallelReader::ParallelReader(const std::vector<std::string>& files, bool direct, unsigned threads)
    : files_(files), direct_(direct) {
  threads_ = threads ? threads : std::max(1u, std::thread::hardware_concurrency());
  for (const std::string& f : files_) {
    int flags = O_RDONLY | O_CLOEXEC;
#ifdef O_DIRECT
    if (direct) flags |= O_DIRECT;
#endif
    const int fd = ::open(f.c_str(), flags);
    if (fd < 0) {
      const int e = errno;
      for (int o : fds_) ::close(o);
      fds_.clear();
      if (direct && e == EINVAL)
        throw IoError("cannot open '" + f + "' for direct (unbuffered) reads: its file system does not support it");
      throw IoError("cannot open '" + f + "': " + std::strerror(e));
    }
    fds_.push_back(fd);
  }
}

ParallelReader::~ParallelReader() {
  for (int fd : fds_) ::close(fd);
}

void ParallelReader::read(const ReadBatch& batch, std::uint8_t* dst) const { read(batch, dst, 0, nullptr); }

void ParallelReader::read(const ReadBatch& batch, std::uint8_t* dst, std::uint64_t step, const Ready& ready) const {
  const std::uint64_t piece_bytes = ready ? kStepPieceBytes : kPieceBytes;
  std::vector<Piece> pieces;  // in the order of their places in dst (the runs' dst_offset grows)
  for (const ReadRun& r : batch.runs)
    for (std::uint64_t o = 0; o < r.bytes; o += piece_bytes) {
      const std::uint64_t n = std::min(piece_bytes, r.bytes - o);
      const std::uint64_t need = r.needed > o ? std::min(n, r.needed - o) : 0;
      pieces.push_back({r.file, r.file_offset + o, n, need, r.dst_offset + o});
    }
  std::atomic<std::size_t> next{0};
  std::mutex err_mu;
  std::exception_ptr err;
  // ready: the pieces read so far, the first not yet read (all before it are), and the end of the last range given
  std::mutex ready_mu;
  std::vector<char> read_done(ready ? pieces.size() : 0, 0);
  std::size_t first_unread = 0;
  std::uint64_t given = 0;
  const auto piece_read = [&](std::size_t i) {
    std::lock_guard lock(ready_mu);
    read_done[i] = 1;
    while (first_unread < pieces.size() && read_done[first_unread]) ++first_unread;
    const std::uint64_t to = first_unread == pieces.size() ? batch.buffer_bytes
                             : first_unread == 0         ? 0
                                                         : pieces[first_unread - 1].dst + pieces[first_unread - 1].bytes;
    if (to > given && (to - given >= step || first_unread == pieces.size())) {
      ready(given, to);
      given = to;
    }
  };
  auto work = [&] {
    for (std::size_t i; (i = next.fetch_add(1)) < pieces.size();) {
      const Piece& p = pieces[i];
      std::uint64_t done = 0;
      while (done < p.bytes) {
        const ssize_t got = ::pread(fds_[p.file], dst + p.dst + done, p.bytes - done, off_t(p.offset + done));
        if (got < 0) {
          if (errno == EINTR) continue;
          std::lock_guard lock(err_mu);
          if (!err)
            err = std::make_exception_ptr(IoError("cannot read '" + files_[p.file] + "' at byte " +
                                                  std::to_string(p.offset + done) + ": " + std::strerror(errno)));
          next = pieces.size();
          return;
        }
        if (got == 0) break;  // end of file
        done += std::uint64_t(got);
      }
      if (done < p.needed) {
        std::lock_guard lock(err_mu);
        if (!err)
          err = std::make_exception_ptr(FormatError("'" + files_[p.file] + "' ends at byte " +
                                                    std::to_string(p.offset + done) + " but chunks reach byte " +
                                                    std::to_string(p.offset + p.needed) + ": truncated file"));
        next = pieces.size();
        return;
      }
      if (ready) {
        try {
          piece_read(i);
        } catch (...) {
          std::lock_guard lock(err_mu);
          if (!err) err = std::current_exception();
          next = pieces.size();
          return;
        }
      }
    }
  };
  // on the process's waiting threads (core/thread_pool.hpp): starting threads for each batch cost ~0.7 ms of it
  run_on_pool(unsigned(std::min<std::size_t>(threads_, pieces.size())), work);
  if (err) std::rethrow_exception(err);
  if (ready && given < batch.buffer_bytes) ready(given, batch.buffer_bytes);  // (no pieces)
}

}  // namespace qgpu::io
