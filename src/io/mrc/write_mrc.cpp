#include "io/mrc/write_mrc.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <vector>

#include "core/atomic_output.hpp"
#include "core/checked.hpp"
#include "core/error.hpp"

namespace qgpu::sample {

namespace {

void put(std::vector<std::uint8_t>& out, std::size_t at, const void* v, std::size_t n, bool big) {
  const auto* p = static_cast<const std::uint8_t*>(v);
  for (std::size_t i = 0; i < n; ++i) out[at + i] = big ? p[n - 1 - i] : p[i];  // host is little-endian
}

void put_i32(std::vector<std::uint8_t>& out, std::size_t at, std::int32_t v, bool big) { put(out, at, &v, 4, big); }

}  // namespace

void write_sample_mrc(const std::string& path, const SampleSpec& s, std::uint32_t extended_header_bytes,
                      const std::function<void(double)>& progress) {
  int mode = 0;
  switch (s.dtype) {
    case DType::i8: mode = 0; break;
    case DType::i16: mode = 1; break;
    case DType::f32: mode = 2; break;
    case DType::u16: mode = 6; break;
    default: throw DTypeError("sample --format mrc: dtype must be int8, int16, float32 or uint16");
  }
  const std::size_t frames = checked_mul<InvalidArgument>(s.scan_rows, s.scan_cols, "sample frames");
  const std::size_t frame_elems = checked_mul<InvalidArgument>(s.det_rows, s.det_cols, "sample frame");
  if (frames > INT32_MAX || s.det_rows > INT32_MAX || s.det_cols > INT32_MAX || extended_header_bytes > INT32_MAX)
    throw InvalidArgument("sample --format mrc: dimensions beyond the header's int32 fields");
  const bool big = s.big_endian;
  const std::size_t es = dtype_size(s.dtype);
  std::vector<std::uint8_t> header(1024, 0);
  put_i32(header, 0, std::int32_t(s.det_cols), big);   // NX: columns, fastest
  put_i32(header, 4, std::int32_t(s.det_rows), big);   // NY: rows
  put_i32(header, 8, std::int32_t(frames), big);       // NZ: frames
  put_i32(header, 12, mode, big);
  put_i32(header, 28, std::int32_t(s.det_cols), big);  // MX, MY, MZ (sampling)
  put_i32(header, 32, std::int32_t(s.det_rows), big);
  put_i32(header, 36, std::int32_t(frames), big);
  put_i32(header, 64, 1, big);                         // MAPC, MAPR, MAPS
  put_i32(header, 68, 2, big);
  put_i32(header, 72, 3, big);
  put_i32(header, 92, std::int32_t(extended_header_bytes), big);
  if (extended_header_bytes) std::memcpy(header.data() + 104, "FEI2", 4);
  put_i32(header, 108, 20140, big);                    // NVERSION
  std::memcpy(header.data() + 208, "MAP ", 4);
  header[212] = big ? 0x11 : 0x44;
  header[213] = big ? 0x11 : 0x44;

  SampleSpec counts = s;
  counts.dtype = DType::u16;
  const double top = s.dtype == DType::i8 ? 127.0 : s.dtype == DType::i16 ? 32767.0 : 65535.0;
  write_file_atomically(path, [&](std::FILE* f) {
    if (std::fwrite(header.data(), 1, header.size(), f) != header.size()) throw IoError("cannot write '" + path + "'");
    const std::vector<std::uint8_t> ext(extended_header_bytes, 0);
    if (!ext.empty() && std::fwrite(ext.data(), 1, ext.size(), f) != ext.size())
      throw IoError("cannot write '" + path + "'");
    const std::size_t batch = std::max<std::size_t>(1, (std::size_t(32) << 20) / std::max<std::size_t>(frame_elems * 2, 1));
    std::vector<std::uint16_t> in(std::min(batch, frames) * frame_elems);
    std::vector<std::uint8_t> out(in.size() * es);
    if (progress) progress(0.0);
    for (std::size_t first = 0; first < frames; first += batch) {
      const std::size_t n = std::min(batch, frames - first);
      simulate_frames(counts, first, n, in.data());
      for (std::size_t i = 0; i < n * frame_elems; ++i) {
        const double v = std::min(double(in[i]), top);
        if (s.dtype == DType::i8) {
          const auto x = std::int8_t(v);
          put(out, i, &x, 1, big);
        } else if (s.dtype == DType::i16) {
          const auto x = std::int16_t(v);
          put(out, i * 2, &x, 2, big);
        } else if (s.dtype == DType::f32) {
          const auto x = float(v);
          put(out, i * 4, &x, 4, big);
        } else {
          const auto x = std::uint16_t(v);
          put(out, i * 2, &x, 2, big);
        }
      }
      const std::size_t bytes = n * frame_elems * es;
      if (std::fwrite(out.data(), 1, bytes, f) != bytes) throw IoError("cannot write '" + path + "'");
      if (progress) progress(double(first + n) / double(frames));
    }
  }, "sample output");
}

}  // namespace qgpu::sample
