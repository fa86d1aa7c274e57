#include "live/protocol/frame_bytes.hpp"

#include <lz4.h>

#include <algorithm>
#include <string>
#include <vector>

#include "core/error.hpp"

namespace qgpu::live::frame_bytes {

namespace {
std::uint64_t be(const std::uint8_t* p, int n) {
  std::uint64_t v = 0;
  for (int i = 0; i < n; ++i) v = (v << 8) | p[i];
  return v;
}
void put_be(std::vector<std::uint8_t>& o, std::uint64_t v, int n) {
  for (int i = n - 1; i >= 0; --i) o.push_back(std::uint8_t(v >> (8 * i)));
}
}  // namespace

std::uint64_t decoded_size(const std::uint8_t* p) { return be(p, 8); }
std::uint32_t block_bytes(const std::uint8_t* p) { return std::uint32_t(be(p + 8, 4)); }

void decode_lz4(const std::uint8_t* data, std::size_t size, std::uint8_t* out, std::size_t out_size) {
  if (size < 12) throw FormatError("lz4 frame of " + std::to_string(size) + " bytes: shorter than its 12-byte header");
  if (decoded_size(data) != out_size)
    throw FormatError("lz4 frame decodes to " + std::to_string(decoded_size(data)) + " bytes; the frame has " +
                      std::to_string(out_size));
  const std::uint64_t block = block_bytes(data);
  if (block == 0 || block > std::uint64_t(LZ4_MAX_INPUT_SIZE))
    throw FormatError("lz4 frame block size " + std::to_string(block));
  std::size_t pos = 12, done = 0, b = 0;
  while (done < out_size) {
    const std::size_t want = std::size_t(std::min<std::uint64_t>(block, out_size - done));
    if (size - pos < 4) throw FormatError("lz4 frame ends before block " + std::to_string(b));
    const std::uint64_t n = be(data + pos, 4);
    pos += 4;
    if (n > size - pos) throw FormatError("lz4 frame block " + std::to_string(b) + " passes the end");
    if (n == want) {  // stored uncompressed (the HDF5 LZ4 filter's rule)
      std::copy(data + pos, data + pos + n, out + done);
    } else {
      const int got = LZ4_decompress_safe(reinterpret_cast<const char*>(data + pos), reinterpret_cast<char*>(out + done),
                                          int(n), int(want));
      if (got != int(want)) throw FormatError("lz4 frame block " + std::to_string(b) + " is malformed");
    }
    pos += std::size_t(n);
    done += want;
    ++b;
  }
  if (pos != size) throw FormatError("lz4 frame has " + std::to_string(size - pos) + " bytes after its last block");
}

std::vector<std::uint8_t> encode_lz4(const std::uint8_t* data, std::size_t size, std::size_t block) {
  std::vector<std::uint8_t> o;
  put_be(o, size, 8);
  put_be(o, block, 4);
  std::vector<char> tmp(static_cast<std::size_t>(LZ4_compressBound(int(block))));
  for (std::size_t done = 0; done < size; done += block) {
    const std::size_t n = std::min(block, size - done);
    const int c = LZ4_compress_default(reinterpret_cast<const char*>(data + done), tmp.data(), int(n), int(tmp.size()));
    if (c <= 0 || std::size_t(c) >= n) {
      put_be(o, n, 4);
      o.insert(o.end(), data + done, data + done + n);
    } else {
      put_be(o, std::uint64_t(c), 4);
      o.insert(o.end(), tmp.begin(), tmp.begin() + c);
    }
  }
  return o;
}

}  // namespace qgpu::live::frame_bytes
