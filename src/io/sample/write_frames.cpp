// The simulated sample as a NumPy .npy file or as headerless raw frames: the same frames as write_sample, streamed
// batch by batch (any size), for tests and benchmarks of the npy and raw readers.
#include <cstdio>
#include <cstring>
#include <memory>

#include "core/atomic_output.hpp"
#include "core/checked.hpp"
#include "core/error.hpp"
#include "io/npy/npy.hpp"
#include "io/sample/sample.hpp"
#include "io/source/frame_codec.hpp"

namespace qgpu::sample {

namespace {

std::string descr_of(DType t, bool big_endian) {
  const char order = t == DType::u8 ? '|' : big_endian ? '>' : '<';
  return std::string(1, order) + "u" + std::to_string(dtype_size(t));
}

// Writes n bytes of zeros (the raw layout's offset, frame headers and footers).
void write_zeros(std::FILE* f, std::uint64_t n, const std::string& path) {
  static const char zeros[4096] = {0};
  while (n > 0) {
    const std::size_t k = std::size_t(std::min<std::uint64_t>(n, sizeof zeros));
    if (std::fwrite(zeros, 1, k, f) != k) throw IoError("cannot write '" + path + "'");
    n -= k;
  }
}

}  // namespace

void write_sample_frames(const std::string& path, const SampleSpec& s, const FramesLayout& layout,
                         const std::function<void(double)>& progress) {
  const std::size_t frames = checked_mul<InvalidArgument>(s.scan_rows, s.scan_cols, "sample frames");
  const std::size_t frame_elems = checked_mul<InvalidArgument>(s.det_rows, s.det_cols, "sample frame");
  const std::size_t es = dtype_size(s.dtype), frame_bytes = frame_elems * es;
  write_file_atomically(path, [&](std::FILE* f) {
  if (layout.npy) {
    const std::vector<std::size_t> shape = s.four_d ? std::vector<std::size_t>{s.scan_rows, s.scan_cols, s.det_rows, s.det_cols}
                                                    : std::vector<std::size_t>{frames, s.det_rows, s.det_cols};
    const std::string h = io::npy_header(descr_of(s.dtype, s.big_endian), shape, false, layout.npy_version);
    if (std::fwrite(h.data(), 1, h.size(), f) != h.size()) throw IoError("cannot write '" + path + "'");
  } else {
    write_zeros(f, layout.offset, path);
  }
  const std::size_t batch = std::max<std::size_t>(1, (std::size_t(64) << 20) / std::max<std::size_t>(frame_bytes, 1));
  std::vector<std::uint8_t> buf(std::min(batch, frames) * frame_bytes);
  if (progress) progress(0.0);
  for (std::size_t first = 0; first < frames; first += batch) {
    const std::size_t n = std::min(batch, frames - first);
    simulate_frames(s, first, n, buf.data());
    if (s.big_endian && es == 2)
      for (std::size_t i = 0; i < n * frame_elems; ++i) {
        auto* p = reinterpret_cast<std::uint16_t*>(buf.data()) + i;
        *p = io::byte_swapped(*p);
      }
    if (s.big_endian && es == 4)
      for (std::size_t i = 0; i < n * frame_elems; ++i) {
        auto* p = reinterpret_cast<std::uint32_t*>(buf.data()) + i;
        *p = io::byte_swapped(*p);
      }
    for (std::size_t k = 0; k < n; ++k) {
      if (!layout.npy) write_zeros(f, layout.frame_header, path);
      if (std::fwrite(buf.data() + k * frame_bytes, 1, frame_bytes, f) != frame_bytes)
        throw IoError("cannot write '" + path + "'");
      if (!layout.npy) write_zeros(f, layout.frame_footer, path);
    }
    if (progress) progress(double(first + n) / double(frames));
  }
  }, "sample output");
}

}  // namespace qgpu::sample
