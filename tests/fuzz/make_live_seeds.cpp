// Seeds of fuzz_live_stream: every message kind our encoders write (the same forms the detectors send), each behind
// its mode byte (fuzz_live_stream.cpp).
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "io/hdf5/codec/bitshuffle_encode_host.hpp"
#include "live/protocol/frame_bytes.hpp"
#include "live/protocol/mpx.hpp"
#include "live/protocol/stream1.hpp"
#include "live/protocol/stream2.hpp"

using namespace qgpu;
using namespace qgpu::live;

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  const std::string dir = argv[1];
  int n = 0;
  const auto write = [&](std::uint8_t mode, const std::vector<std::uint8_t>& bytes) {
    std::ofstream f(dir + "/seed_" + std::to_string(n++), std::ios::binary);
    f.put(char(mode));
    f.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
  };
  std::vector<std::uint16_t> frame(8 * 12);
  for (std::size_t i = 0; i < frame.size(); ++i) frame[i] = std::uint16_t(i * 7 % 50);
  io::codec::BitshuffleParams p;
  p.elem_size = 2;
  p.block_elems = 64;
  const auto chunk = io::codec::encode_chunk(p, frame.size(), frame.data());
  SeriesInfo info;
  info.det_rows = 8;
  info.det_cols = 12;
  info.frames = 6;
  info.scan_rows = 2;
  info.scan_cols = 3;
  std::vector<std::uint32_t> mask(96, 0);
  mask[5] = 1;
  write(0, stream2::encode_start(1, info, 300000, mask));
  write(0, stream2::encode_image(1, 0, 8, 12, DType::u16, "bslz4", chunk.data(), chunk.size()));
  write(0, stream2::encode_image(1, 1, 8, 12, DType::u16, "", reinterpret_cast<const std::uint8_t*>(frame.data()),
                                 frame.size() * 2));
  const auto lz = frame_bytes::encode_lz4(reinterpret_cast<const std::uint8_t*>(frame.data()), frame.size() * 2, 64);
  write(0, stream2::encode_image(1, 2, 8, 12, DType::u16, "lz4", lz.data(), lz.size()));
  write(0, stream2::encode_end(1));
  const auto join = [](const std::vector<std::vector<std::uint8_t>>& parts) {
    std::vector<std::uint8_t> out;
    for (std::size_t i = 0; i < parts.size(); ++i) {
      if (i) out.insert(out.end(), {'\n', '-', '-', '\n'});
      out.insert(out.end(), parts[i].begin(), parts[i].end());
    }
    return out;
  };
  write(1, join(stream1::encode_header(1, info, 300000)));
  write(1, join(stream1::encode_image(1, 0, 8, 12, DType::u16, "bs16-lz4<", chunk.data(), chunk.size())));
  write(1, join(stream1::encode_end(1)));
  const std::string hdr = "HDR,\tFrames in Acquisition (Number):\t6\nEnd\t";
  write(2, mpx::message(reinterpret_cast<const std::uint8_t*>(hdr.data()), hdr.size()));
  write(3, stream2::encode_start(2, info, 80000, {}));
  write(4, lz);
  std::printf("%d seeds\n", n);
  return 0;
}
