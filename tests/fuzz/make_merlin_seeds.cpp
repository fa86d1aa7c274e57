// Writes a seed corpus for fuzz_merlin_header: frames of the sample writer's header layout (every counter depth,
// single/quad/2x2G, binary/raw, small frames) with their payloads, the same without MQ1A (raw: depth from the
// .hdr byte), and .hdr texts.
#include <cstdio>
#include <string>
#include <vector>

#include "io/merlin/mib_decode.hpp"
#include "io/merlin/mib_writer.hpp"

namespace merlin = qgpu::io::merlin;

namespace {

int written = 0;

void put(const std::string& dir, const std::string& name, std::uint8_t mode, std::uint8_t depth_index,
         const std::string& body) {
  std::string out;
  out += char(mode);
  out += char(depth_index);
  out += body;
  FILE* f = std::fopen((dir + "/" + name).c_str(), "wb");
  if (!f) std::exit(1);
  std::fwrite(out.data(), 1, out.size(), f);
  std::fclose(f);
  ++written;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: fuzz_make_merlin_seeds OUT_DIR\n");
    return 2;
  }
  const std::string dir = argv[1];
  for (std::uint32_t d : {1u, 6u, 12u, 24u})
    for (bool quad : {false, true})
      for (bool raw : {false, true})
        for (bool gap : {false, true}) {
          if (gap && !quad) continue;
          merlin::MibWriteSpec s;
          s.counter_depth = d, s.quad = quad, s.raw = raw, s.gap = gap;
          s.rows = s.cols = quad ? (gap ? 130 : 128) : 64;
          const merlin::PixelFormat f = merlin::writer_format(s);
          std::vector<std::uint8_t> frame(f.frame_bytes_out()), payload(f.payload_bytes);
          for (std::size_t i = 0; i < f.frame_pixels(); ++i) {  // a sparse pattern within the depth
            std::uint32_t r = i / f.cols, c = i % f.cols, idx = 0;
            const std::uint32_t v = (r * 7 + c * 3) % 11 == 0 && merlin::raw_index(f, r, c, &idx) ? (i % ((1u << d) - 1)) + 1 : 0;
            if (f.out_bytes() == 1) frame[i] = std::uint8_t(v);
            else if (f.out_bytes() == 2) reinterpret_cast<std::uint16_t*>(frame.data())[i] = std::uint16_t(v);
            else reinterpret_cast<std::uint32_t*>(frame.data())[i] = v;
          }
          merlin::encode_frame_host(f, frame.data(), payload.data());
          merlin::FrameHeader h = merlin::writer_header(s, 3);
          const std::string tag = "d" + std::to_string(d) + (quad ? "_quad" : "_single") + (raw ? "_raw" : "_bin") +
                                  (gap ? "_gap" : "");
          put(dir, "frame_" + tag, 0, 0, merlin::format_frame_header(h) + std::string(payload.begin(), payload.end()));
          h.mq1a = false;  // no extension: the depth from the .hdr byte (index of d in 0, 1, 6, 12, 24)
          const std::uint8_t di = d == 1 ? 1 : d == 6 ? 2 : d == 12 ? 3 : 4;
          put(dir, "frame_nomq1a_" + tag, 0, di,
              merlin::format_frame_header(h) + std::string(payload.begin(), payload.end()));
          if (!quad && !raw)
            put(dir, "hdr_" + tag, 1, 0, merlin::format_acquisition_header(s, 4096, 64, d == 12 ? 64 : 0, d == 12 ? 64 : 0));
        }
  std::printf("%d seeds in %s\n", written, dir.c_str());
  return 0;
}
