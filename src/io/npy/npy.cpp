#include "io/npy/npy.hpp"

#include <cstdint>
#include <cstdio>

#include "core/atomic_output.hpp"
#include "core/error.hpp"

namespace qgpu::io {

std::string npy_header(const std::string& descr, const std::vector<std::size_t>& shape, bool fortran_order,
                       unsigned version) {
  if (version != 1 && version != 2) throw InvalidArgument("npy header version " + std::to_string(version));
  std::string dims;
  for (std::size_t d : shape) dims += std::to_string(d) + ", ";
  if (shape.size() > 1) dims.resize(dims.size() - 2);
  std::string dict = "{'descr': '" + descr + "', 'fortran_order': " + (fortran_order ? "True" : "False") +
                     ", 'shape': (" + dims + "), }";
  // Magic (6) + version (2) + header length (2 or 4) + dict, padded with spaces to a multiple of 64, ending in \n.
  const std::size_t prefix = version == 1 ? 10 : 12;
  const std::size_t unpadded = prefix + dict.size() + 1;
  dict.append((64 - unpadded % 64) % 64, ' ');
  dict += '\n';
  if (version == 1 && dict.size() > 0xffff) throw InvalidArgument("npy header beyond 64 KiB: use version 2");
  std::string out = {'\x93', 'N', 'U', 'M', 'P', 'Y', char(version), 0};
  const std::size_t len = dict.size();
  for (std::size_t i = 0; i < prefix - 8; ++i) out += char((len >> (8 * i)) & 0xff);
  return out + dict;
}

void write_npy(const std::string& path, const std::string& descr, const std::vector<std::size_t>& shape,
               const void* data, std::size_t bytes) {
  const std::string header = npy_header(descr, shape);
  write_file_atomically(path, [&](std::FILE* f) {
    std::fwrite(header.data(), 1, header.size(), f);
    if (bytes) std::fwrite(data, 1, bytes, f);
  }, "npy output");
}

}  // namespace qgpu::io
