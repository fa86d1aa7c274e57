#include "io/hdf5/codec/bitshuffle_params.hpp"

#include <lz4.h>

#include "core/error.hpp"

namespace qgpu::io::codec {

std::string describe(BlockCompression c) {
  return c == BlockCompression::lz4 ? "bitshuffle+lz4 (cd_values[4]=2)" : "bitshuffle+zstd (cd_values[4]=3)";
}

void validate(const BitshuffleParams& p) {
  if (p.elem_size != 1 && p.elem_size != 2 && p.elem_size != 4 && p.elem_size != 8)
    throw FormatError("bitshuffle element size " + std::to_string(p.elem_size) +
                      " bytes is not supported (1, 2, 4 or 8)");
  if (p.block_elems == 0 || p.block_elems % kBlockMultiple != 0)
    throw FormatError("bitshuffle block size " + std::to_string(p.block_elems) +
                      " elements is not a positive multiple of 8");
  if (p.block_elems > std::size_t(LZ4_MAX_INPUT_SIZE) / p.elem_size)
    throw FormatError("bitshuffle block size " + std::to_string(p.block_elems) + " elements exceeds " +
                      std::to_string(LZ4_MAX_INPUT_SIZE) + " bytes");
  if (p.compression != BlockCompression::lz4 && p.compression != BlockCompression::zstd)
    throw FormatError("bitshuffle compression " + std::to_string(unsigned(p.compression)) +
                      " is not LZ4 (2) or zstd (3)");
}

BitshuffleParams params_from_cd_values(const std::vector<unsigned>& cd) {
  if (cd.size() < 3) throw FormatError("bitshuffle filter has " + std::to_string(cd.size()) +
                                       " cd_values, expected at least 3 (versions, element size)");
  BitshuffleParams p;
  p.elem_size = cd[2];
  if (p.elem_size != 1 && p.elem_size != 2 && p.elem_size != 4 && p.elem_size != 8) validate(p);
  p.block_elems = (cd.size() > 3 && cd[3] != 0) ? cd[3] : default_block_elems(p.elem_size);
  const unsigned comp = cd.size() > 4 ? cd[4] : 0;
  if (comp != unsigned(BlockCompression::lz4) && comp != unsigned(BlockCompression::zstd))
    throw FormatError("bitshuffle filter compression cd_values[4]=" + std::to_string(comp) +
                      " is not LZ4 (2) or zstd (3)");
  p.compression = BlockCompression(comp);
  p.zstd_level = cd.size() > 5 ? int(cd[5]) : 0;
  validate(p);
  return p;
}

std::vector<unsigned> filter_cd_values(const BitshuffleParams& p) {
  std::vector<unsigned> cd = {unsigned(p.block_elems), unsigned(p.compression)};
  if (p.compression == BlockCompression::zstd) cd.push_back(unsigned(p.zstd_level));
  return cd;
}

}  // namespace qgpu::io::codec
