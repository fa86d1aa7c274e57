// read_head (io/source/readers.hpp): in a file of its own, so that a reader's fuzz harness links it without the
// registry of every reader.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/error.hpp"
#include "io/source/readers.hpp"

namespace qgpu::io {

std::size_t read_head(const std::string& path, std::uint8_t* head, std::size_t size) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) throw IoError("cannot open '" + path + "': " + std::strerror(errno));
  const ssize_t got = ::pread(fd, head, size, 0);
  ::close(fd);
  if (got < 0) throw IoError("cannot read '" + path + "': " + std::strerror(errno));
  return std::size_t(got);
}

}  // namespace qgpu::io
