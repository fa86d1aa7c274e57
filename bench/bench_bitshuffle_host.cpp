// Host bitshuffle codec throughput on simulated sample frames (no file): encode on all cores, then decode the
// chunks as one batch on 1 thread and on all cores; GB/s of decoded output, best of 3; checks the frames are exact.
// usage: bench_bitshuffle_host [scan det [zstd]]   (default 64 192: 64x64x192x192 uint16, LZ4)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "io/hdf5/codec/bitshuffle_decode_host.hpp"
#include "io/hdf5/codec/bitshuffle_encode_host.hpp"
#include "io/sample/sample.hpp"
#include "bench_guard.hpp"

using namespace qgpu;
using namespace qgpu::io::codec;

namespace {
double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
}  // namespace

static int bench_main(int argc, char** argv) {
  const std::size_t scan = argc > 2 ? std::stoul(argv[1]) : 64, det = argc > 2 ? std::stoul(argv[2]) : 192;
  const bool zstd = argc > 3 && std::strcmp(argv[3], "zstd") == 0;
  sample::SampleSpec s;
  s.scan_rows = s.scan_cols = scan;
  s.det_rows = s.det_cols = det;
  const std::size_t frames = scan * scan, n = det * det;
  std::vector<std::uint16_t> data(frames * n);
  sample::simulate_frames(s, 0, frames, data.data());
  const BitshuffleParams p{2, default_block_elems(2), zstd ? BlockCompression::zstd : BlockCompression::lz4, 0};
  const double gb = double(data.size() * 2) / 1e9;
  std::printf("%zux%zux%zux%zu uint16, %s, %u hardware threads\n", scan, scan, det, det, zstd ? "zstd" : "LZ4",
              std::thread::hardware_concurrency());
  std::vector<std::vector<std::uint8_t>> chunks;
  for (unsigned t : {1u, 0u}) {
    const double a = now();
    encode_chunks(p, n, data.data(), frames, chunks, t);
    std::printf("encode threads=%u: %.2f GB/s of frames\n", t, gb / (now() - a));
  }
  std::vector<std::uint8_t> base;
  std::vector<std::uint64_t> off, size;
  for (const auto& c : chunks) {
    off.push_back(base.size());
    size.push_back(c.size());
    base.insert(base.end(), c.begin(), c.end());
  }
  std::printf("compressed %.3f GB (ratio %.1f)\n", double(base.size()) / 1e9, gb * 1e9 / double(base.size()));
  std::vector<std::uint16_t> out(data.size());
  std::vector<void*> dest(frames);
  for (std::size_t f = 0; f < frames; ++f) dest[f] = out.data() + f * n;
  const ChunkBatch b{base.data(), base.size(), off.data(), size.data(), dest.data(), frames};
  for (unsigned t : {1u, 0u}) {
    double best = 1e30;
    for (int r = 0; r < 3; ++r) {
      std::fill(out.begin(), out.end(), 0);
      const double a = now();
      if (auto f = decode_chunks(p, n, b, t)) {
        std::printf("decode failed: chunk %zu: %s\n", f->chunk, f->reason.c_str());
        return 1;
      }
      best = std::min(best, now() - a);
    }
    std::printf("decode threads=%u: %.2f GB/s decoded (%s)\n", t, gb / best, out == data ? "exact" : "MISMATCH");
    if (out != data) return 1;
  }
  return 0;
}

QGPU_BENCH_MAIN("usage: bench_bitshuffle_host [scan det [zstd]]   (default 64 192: 64x64x192x192 uint16, LZ4)")
