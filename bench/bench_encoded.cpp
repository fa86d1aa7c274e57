// Compression and CPU speed of the encoded-v1 resident on the simulated sample and synthetic distributions.
// Usage: bench_encoded [scan_rows scan_cols det] (default 64 64 192). Writes the bitshuffle+LZ4 sample beside it
// (bench_encoded_sample.h5 in the working folder) to compare with its file size.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "io/sample/sample.hpp"
#include "resident/encoded/cpu/encoded_cpu.hpp"
#include "bench_guard.hpp"

using namespace qgpu;
using Clock = std::chrono::steady_clock;

namespace {

struct Result {
  std::size_t payload = 0, dir = 0, sums = 0, totals = 0, models[5] = {};
  double encode_s = 0, decode_s = 0;
  bool exact = false;
  std::size_t total() const { return payload + dir + sums + totals; }
};

Result run(const encoded::Layout& l, const std::vector<std::uint8_t>& dense) {
  Result r;
  std::vector<encoded::cpu::HostTile> tiles;
  const std::size_t fb = l.frame_pixels * dtype_size(l.dtype);
  auto t0 = Clock::now();
  for (std::size_t t = 0; t < l.tiles(); ++t) tiles.push_back(encoded::cpu::encode_tile(l, dense.data() + t * l.tile * fb, l.tile_len(t)));
  r.encode_s = std::chrono::duration<double>(Clock::now() - t0).count();
  std::vector<encoded::TileRef> refs;
  for (auto& t : tiles) {
    refs.push_back(t.ref());
    r.payload += t.payload.size();
    r.dir += t.dir.size() * 4;
    for (std::size_t p = 0; p < l.frame_pixels; ++p) ++r.models[t.dir[p] == t.dir[p + 1] ? 0 : t.payload[t.dir[p]]];
  }
  r.totals = l.frames * 8;
  r.sums = l.frame_pixels * 8;  // the sum pattern
  t0 = Clock::now();
  const auto back = encoded::cpu::decode_all(l, refs);
  r.decode_s = std::chrono::duration<double>(Clock::now() - t0).count();
  r.exact = back == dense;
  return r;
}

void report(const char* name, const encoded::Layout& l, const std::vector<std::uint8_t>& dense, double file_bytes) {
  const Result r = run(l, dense);
  const double mb = dense.size() / 1e6;
  std::printf("%-28s dense %9.2f MB  resident %8.3f MB (payload %.3f dir %.3f sums %.3f totals %.3f)  %6.1fx",
              name, mb, r.total() / 1e6, r.payload / 1e6, r.dir / 1e6, r.sums / 1e6, r.totals / 1e6,
              dense.size() / double(r.total()));
  if (file_bytes > 0) std::printf("  bslz4 file %.3f MB (%.1fx)", file_bytes / 1e6, dense.size() / file_bytes);
  std::printf("\n  models zero %zu const %zu sparse %zu raw %zu rans %zu; encode %.1f MB/s decode %.1f MB/s (dense); exact %s\n",
              r.models[0], r.models[1], r.models[2], r.models[3], r.models[4], mb / r.encode_s, mb / r.decode_s,
              r.exact ? "yes" : "NO");
}

template <class T, class Gen> std::vector<std::uint8_t> synthetic(std::size_t n, Gen gen) {
  std::vector<std::uint8_t> b(n * sizeof(T));
  T* p = reinterpret_cast<T*>(b.data());
  for (std::size_t i = 0; i < n; ++i) p[i] = static_cast<T>(gen(i));
  return b;
}

}  // namespace

static int bench_main(int argc, char** argv) {
  sample::SampleSpec s;
  s.scan_rows = argc > 1 ? std::stoul(argv[1]) : 64;
  s.scan_cols = argc > 2 ? std::stoul(argv[2]) : 64;
  s.det_rows = s.det_cols = argc > 3 ? std::stoul(argv[3]) : 192;
  s.dtype = DType::u16;
  encoded::Layout l{s.scan_rows * s.scan_cols, s.det_rows * s.det_cols, DType::u16, encoded::kDefaultTile};
  std::vector<std::uint8_t> dense(l.frames * l.frame_pixels * 2);
  sample::simulate_frames(s, 0, l.frames, dense.data());
  const std::string path = "bench_encoded_sample.h5";
  sample::write_sample(path, s);
  const double file = static_cast<double>(std::filesystem::file_size(path));
  report("sample uint16", l, dense, file);

  std::mt19937_64 rng(7);
  const std::size_t n = l.frames * l.frame_pixels;
  std::poisson_distribution<int> p01(0.1), p2(2.0), p500(500.0);
  std::uniform_int_distribution<std::uint32_t> u32;
  report("poisson 0.1 uint16", l, synthetic<std::uint16_t>(n, [&](std::size_t) { return p01(rng); }), 0);
  report("poisson 2 uint16", l, synthetic<std::uint16_t>(n, [&](std::size_t) { return p2(rng); }), 0);
  report("poisson 500 uint16", l, synthetic<std::uint16_t>(n, [&](std::size_t) { return p500(rng); }), 0);
  report("uniform uint32", {l.frames, l.frame_pixels, DType::u32, l.tile},
         synthetic<std::uint32_t>(n, [&](std::size_t) { return u32(rng); }), 0);
  return 0;
}

QGPU_BENCH_MAIN("usage: bench_encoded [scan_rows scan_cols det]   (default 64 64 192)")
