#include "io/hdf5/index/byte_source.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/error.hpp"

namespace qgpu::io::h5index {

namespace {
// No single index structure of a sane file comes near this; a corrupt size must not allocate gigabytes.
constexpr std::uint64_t kMaxRead = std::uint64_t(1) << 30;
}  // namespace

std::vector<std::uint8_t> ByteSource::read(std::uint64_t offset, std::uint64_t n, const char* what) const {
  std::vector<std::uint8_t> out;
  check(offset, n, what);
  out.resize(static_cast<std::size_t>(n));
  if (n) read_into(offset, out.data(), out.size());
  return out;
}

void ByteSource::read_to(std::uint64_t offset, std::uint64_t n, std::uint8_t* dst, const char* what) const {
  check(offset, n, what);
  if (n) read_into(offset, dst, static_cast<std::size_t>(n));
}

void ByteSource::check(std::uint64_t offset, std::uint64_t n, const char* what) const {
  if (n > kMaxRead)
    throw FormatError(std::string("chunk index: ") + what + " claims " + std::to_string(n) +
                      " bytes (corrupt index)");
  require_within(offset, n, what);
}

void ByteSource::require_within(std::uint64_t offset, std::uint64_t n, const char* what) const {
  if (offset > size() || n > size() - offset)
    throw FormatError(std::string("chunk index: ") + what + " at byte " + std::to_string(offset) + " (+" +
                      std::to_string(n) + ") lies beyond the end of the file (" + std::to_string(size()) +
                      " bytes; truncated or corrupt)");
}

FileByteSource::FileByteSource(const std::string& path) : path_(path) {
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) throw IoError("cannot open '" + path + "' to read its chunk index: " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd_, &st) != 0) {
    ::close(fd_);
    throw IoError("cannot stat '" + path + "': " + std::strerror(errno));
  }
  size_ = static_cast<std::uint64_t>(st.st_size);
}

FileByteSource::~FileByteSource() {
  if (fd_ >= 0) ::close(fd_);
}

void FileByteSource::read_into(std::uint64_t offset, void* dst, std::size_t n) const {
  auto* p = static_cast<std::uint8_t*>(dst);
  while (n > 0) {
    const ssize_t got = ::pread(fd_, p, n, static_cast<off_t>(offset));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0)
      throw IoError("reading the chunk index of '" + path_ + "' at byte " + std::to_string(offset) + " failed" +
                    (got < 0 ? std::string(": ") + std::strerror(errno) : std::string(" (file shrank?)")));
    p += got;
    offset += static_cast<std::uint64_t>(got);
    n -= static_cast<std::size_t>(got);
  }
}

void MemoryByteSource::read_into(std::uint64_t offset, void* dst, std::size_t n) const {
  std::memcpy(dst, data_ + offset, n);
}

}  // namespace qgpu::io::h5index
