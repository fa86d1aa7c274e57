#pragma once
// Small Merlin acquisitions for the tests (written by io::merlin::write_mib_acquisition with deterministic
// counts), and byte-level edits of them.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "io/merlin/mib_decode.hpp"
#include "io/merlin/mib_writer.hpp"
#include "support/temp_files.hpp"

namespace qgpu::test {

// Count of pixel i of frame k within the counter depth (varied, nonzero somewhere in every frame).
inline std::uint32_t merlin_count(std::uint64_t k, std::uint64_t i, std::uint32_t depth) {
  std::uint64_t x = (k + 1) * 0x9e3779b97f4a7c15ull ^ (i + 7) * 0xbf58476d1ce4e5b9ull;
  x ^= x >> 29;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 31;
  const std::uint64_t max = (std::uint64_t(1) << depth) - 1;
  return std::uint32_t(x % (max + 1));
}

// Fills frames [first, first + count) of format f with merlin_count (gap pixels of raw 2x2G frames zero).
inline void merlin_fill(const io::merlin::PixelFormat& f, std::uint64_t first, std::uint64_t count, void* out) {
  const std::uint64_t px = f.frame_pixels();
  for (std::uint64_t k = 0; k < count; ++k)
    for (std::uint32_t r = 0; r < f.rows; ++r)
      for (std::uint32_t c = 0; c < f.cols; ++c) {
        std::uint32_t i = 0;
        const bool stored = io::merlin::raw_index(f, r, c, &i);
        const std::uint64_t j = k * px + std::uint64_t(r) * f.cols + c;
        const std::uint32_t v = (f.raw && !stored) ? 0 : merlin_count(first + k, std::uint64_t(r) * f.cols + c,
                                                                       f.counter_depth);
        if (f.out_bytes() == 1) static_cast<std::uint8_t*>(out)[j] = std::uint8_t(v);
        else if (f.out_bytes() == 2) static_cast<std::uint16_t*>(out)[j] = std::uint16_t(v);
        else static_cast<std::uint32_t*>(out)[j] = v;
      }
}

// A fresh folder for one test.
inline std::filesystem::path merlin_dir(const std::string& name) {
  const std::filesystem::path dir = temp_path(name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

// Writes <dir>/<name>.mib (or <name>_00000K.mib for files > 1) and <name>.hdr; returns the files, .hdr last.
inline std::vector<std::string> write_merlin(const std::filesystem::path& dir, const std::string& name,
                                             const io::merlin::MibWriteSpec& spec, std::uint64_t rows,
                                             std::uint64_t cols, std::size_t files = 0) {
  const io::merlin::PixelFormat f = io::merlin::writer_format(spec);
  return io::merlin::write_mib_acquisition((dir / (name + ".mib")).string(), spec, rows, cols, files,
                                           [&](std::uint64_t first, std::uint64_t n, void* out) {
                                             merlin_fill(f, first, n, out);
                                           });
}

inline std::vector<std::uint8_t> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

inline void write_bytes(const std::string& path, const std::vector<std::uint8_t>& b) {
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(b.data()), std::streamsize(b.size()));
}

// Replaces the bytes of `from` at offset `at` by `to` (same length).
inline void patch(const std::string& path, std::uint64_t at, const std::string& from, const std::string& to) {
  std::vector<std::uint8_t> b = read_bytes(path);
  ASSERT_EQ(from.size(), to.size());
  ASSERT_LE(at + from.size(), b.size());
  ASSERT_EQ(std::string(b.begin() + std::ptrdiff_t(at), b.begin() + std::ptrdiff_t(at + from.size())), from);
  std::memcpy(b.data() + at, to.data(), to.size());
  write_bytes(path, b);
}

}  // namespace qgpu::test
