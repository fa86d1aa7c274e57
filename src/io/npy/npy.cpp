#include "io/npy/npy.hpp"

#include <cstdint>
#include <cstdio>

#include "core/atomic_output.hpp"

namespace qgpu::io {

void write_npy(const std::string& path, const std::string& descr, const std::vector<std::size_t>& shape,
               const void* data, std::size_t bytes) {
  std::string dims;
  for (std::size_t d : shape) dims += std::to_string(d) + ", ";
  if (shape.size() > 1) dims.resize(dims.size() - 2);
  std::string header = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': (" + dims + "), }";
  // Magic (6) + version (2) + header length (2) + header, padded with spaces to a multiple of 64, ending in \n.
  const std::size_t unpadded = 10 + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header += '\n';
  write_file_atomically(path, [&](std::FILE* f) {
    const char magic[8] = {'\x93', 'N', 'U', 'M', 'P', 'Y', 1, 0};
    const std::uint16_t len = static_cast<std::uint16_t>(header.size());
    const char le[2] = {char(len & 0xff), char(len >> 8)};
    std::fwrite(magic, 1, 8, f);
    std::fwrite(le, 1, 2, f);
    std::fwrite(header.data(), 1, header.size(), f);
    if (bytes) std::fwrite(data, 1, bytes, f);
  }, "npy output");
}

}  // namespace qgpu::io
