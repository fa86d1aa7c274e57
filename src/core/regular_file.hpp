#pragma once
// What may be opened as an input file: refused before anything opens it are a missing path, a symlink loop, a FIFO
// (opening one blocks forever), a socket, a directory or device, and an unreadable file.
#include <string>

namespace qgpu {

// IoError naming the path and what it is ("a named pipe (FIFO), not a regular <kind>"); never anything else.
void require_readable_regular_file(const std::string& path, const std::string& kind = "file");

}  // namespace qgpu
