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

void ParallelReader::read(const ReadBatch& batch, std::uint8_t* dst) const {
  std::vector<Piece> pieces;
  for (const ReadRun& r : batch.runs)
    for (std::uint64_t o = 0; o < r.bytes; o += kPieceBytes) {
      const std::uint64_t n = std::min(kPieceBytes, r.bytes - o);
      const std::uint64_t need = r.needed > o ? std::min(n, r.needed - o) : 0;
      pieces.push_back({r.file, r.file_offset + o, n, need, r.dst_offset + o});
    }
  std::atomic<std::size_t> next{0};
  std::mutex err_mu;
  std::exception_ptr err;
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
    }
  };
  // on the process's waiting threads (core/thread_pool.hpp): starting threads for each batch cost ~0.7 ms of it
  run_on_pool(unsigned(std::min<std::size_t>(threads_, pieces.size())), work);
  if (err) std::rethrow_exception(err);
}

}  // namespace qgpu::io
