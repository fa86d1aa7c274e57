// Writes a seed corpus for fuzz_bitshuffle_host: valid chunks (our encoder, byte-identical to the HDF5 plugin's
// LZ4 chunks) for each element size, a few block sizes, LZ4 and zstd, frames with partial blocks and tails.
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "fuzz_input.hpp"
#include "io/hdf5/codec/bitshuffle_encode_host.hpp"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: fuzz_make_codec_seeds OUT_DIR\n");
    return 2;
  }
  std::mt19937 rng(7);
  std::poisson_distribution<unsigned> counts(2.0);
  int written = 0;
  for (std::size_t ei = 0; ei < 4; ++ei)
    for (std::size_t bi : {0, 1, 3})
      for (bool zstd : {false, true})
        for (std::size_t n : {5, 300, 1029}) {
          const qgpu::fuzz::FuzzCase c = [&] {
            std::uint8_t p[5];
            qgpu::fuzz::write_prefix(p, ei, bi, zstd, n);
            return qgpu::fuzz::parse_prefix(p);
          }();
          std::vector<std::uint8_t> frame(n * c.params.elem_size, 0);
          for (std::size_t i = 0; i < n; ++i) frame[i * c.params.elem_size] = std::uint8_t(counts(rng));
          std::vector<std::uint8_t> out(5);
          qgpu::fuzz::write_prefix(out.data(), ei, bi, zstd, n);
          const auto chunk = qgpu::io::codec::encode_chunk(c.params, n, frame.data());
          out.insert(out.end(), chunk.begin(), chunk.end());
          const std::string path = std::string(argv[1]) + "/seed_e" + std::to_string(c.params.elem_size) + "_b" +
                                   std::to_string(bi) + (zstd ? "_zstd" : "_lz4") + "_n" + std::to_string(n);
          FILE* f = std::fopen(path.c_str(), "wb");
          if (!f) return 1;
          std::fwrite(out.data(), 1, out.size(), f);
          std::fclose(f);
          ++written;
        }
  std::printf("%d seeds in %s\n", written, argv[1]);
  return 0;
}
