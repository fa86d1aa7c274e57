// The simulated sample as a Merlin acquisition (.mib frames + .hdr): `qgpu sample --format mib`.
#include <algorithm>

#include "core/error.hpp"
#include "io/merlin/mib_writer.hpp"
#include "io/sample/sample.hpp"

namespace qgpu::sample {

std::vector<std::string> write_sample_mib(const std::string& path, const SampleSpec& spec, const MibSampleOptions& o,
                                          std::size_t files, const std::function<void(double)>& progress) {
  io::merlin::MibWriteSpec w;
  w.counter_depth = o.counter_depth;
  w.quad = o.quad;
  w.raw = o.raw;
  w.gap = o.gap;
  w.rows = std::uint32_t(spec.det_rows);
  w.cols = std::uint32_t(spec.det_cols);
  if (spec.det_rows != w.rows || spec.det_cols != w.cols) throw InvalidArgument("sample: detector too large for a .mib");
  const io::merlin::PixelFormat f = io::merlin::writer_format(w);  // checks the geometry for this format
  SampleSpec s = spec;
  s.dtype = f.out_dtype;
  const std::uint32_t max = (1u << std::min<std::uint32_t>(o.counter_depth, 31)) - 1u;
  auto clip = [&](auto* px, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) px[i] = std::min<std::uint32_t>(px[i], max);
  };
  const std::size_t frame_px = s.det_rows * s.det_cols;
  auto fill = [&](std::uint64_t first, std::uint64_t count, void* out) {
    simulate_frames(s, first, count, out);
    const std::size_t n = count * frame_px;
    if (f.out_dtype == DType::u8) clip(static_cast<std::uint8_t*>(out), n);
    else if (f.out_dtype == DType::u16) clip(static_cast<std::uint16_t*>(out), n);
    else clip(static_cast<std::uint32_t*>(out), n);
  };
  return io::merlin::write_mib_acquisition(path, w, s.scan_rows, s.scan_cols, files, fill, progress);
}

}  // namespace qgpu::sample
