#include "core/regular_file.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "core/error.hpp"

namespace qgpu {

namespace {

namespace fs = std::filesystem;

std::string type_name(fs::file_type t) {
  switch (t) {
    case fs::file_type::directory: return "a directory";
    case fs::file_type::fifo: return "a named pipe (FIFO)";
    case fs::file_type::socket: return "a socket";
    case fs::file_type::block: return "a block device";
    case fs::file_type::character: return "a character device";
    default: return "not a regular file";
  }
}

}  // namespace

void require_readable_regular_file(const std::string& path, const std::string& kind) {
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (st.type() == fs::file_type::not_found) throw IoError("file not found: '" + path + "'");
  if (ec) throw IoError("cannot access '" + path + "': " + ec.message());
  if (st.type() != fs::file_type::regular)
    throw IoError("'" + path + "' is " + type_name(st.type()) + ", not a regular " + kind);
  if (::access(path.c_str(), R_OK) != 0) {
    const int err = errno;
    if (err == EACCES) throw IoError("permission denied: cannot read '" + path + "'");
    throw IoError("cannot read '" + path + "': " + std::strerror(err));
  }
}

}  // namespace qgpu
