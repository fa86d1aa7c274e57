#include "core/regular_file.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "core/atomic_output.hpp"
#include "core/error.hpp"

namespace qgpu {

namespace fs = std::filesystem;

void require_readable_regular_file(const std::string& path, const std::string& kind) {
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (st.type() == fs::file_type::not_found) throw IoError("file not found: '" + path + "'");
  if (ec) throw IoError("cannot access '" + path + "': " + ec.message());
  if (st.type() != fs::file_type::regular)
    throw IoError("'" + path + "' is " + file_type_text(st.type()) + ", not a regular " + kind);
  if (::access(path.c_str(), R_OK) != 0) {
    const int err = errno;
    if (err == EACCES) throw IoError("permission denied: cannot read '" + path + "'");
    throw IoError("cannot read '" + path + "': " + std::strerror(err));
  }
}

}  // namespace qgpu
