// The simulated sample as an EMPAD acquisition (.xml + .raw of 130 x 128 float32 frames with 2 footer rows), for
// tests of the EMPAD reader (io/empad/empad_reader.hpp).
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>

#include "core/atomic_output.hpp"
#include "core/checked.hpp"
#include "core/error.hpp"
#include "io/empad/empad_reader.hpp"
#include "io/sample/sample.hpp"

namespace qgpu::sample {

namespace {

std::string xml_escaped(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '&') out += "&amp;";
    else if (c == '<') out += "&lt;";
    else if (c == '>') out += "&gt;";
    else if (c == '"') out += "&quot;";
    else out += c;
  }
  return out;
}

template <class T> void widen(const std::uint8_t* in, std::size_t n, float* out) {
  for (std::size_t i = 0; i < n; ++i) {
    T v;
    std::memcpy(&v, in + i * sizeof(T), sizeof(T));
    out[i] = float(v);
  }
}

}  // namespace

std::vector<std::string> write_sample_empad(const std::string& path, const SampleSpec& s, std::size_t nans,
                                            const std::function<void(double)>& progress) {
  using io::empad::kCols;
  using io::empad::kRawRows;
  using io::empad::kRows;
  if (s.det_rows != kRows || s.det_cols != kCols)
    throw InvalidArgument("an EMPAD sample has a 128 x 128 detector, not " + std::to_string(s.det_rows) + " x " +
                          std::to_string(s.det_cols));
  sampling(s);  // validates the spec before any file is created
  const std::size_t frames = checked_mul<InvalidArgument>(s.scan_rows, s.scan_cols, "sample frames");
  const std::filesystem::path xml(path);
  const std::string raw_name = xml.stem().string() + ".raw";
  const std::string raw_path = (xml.parent_path() / raw_name).string();
  const std::size_t frame_elems = kRows * kCols, es = dtype_size(s.dtype);
  const std::size_t batch = std::max<std::size_t>(1, (std::size_t(64) << 20) / (frame_elems * 4));
  write_file_atomically(raw_path, [&](std::FILE* f) {
    std::vector<std::uint8_t> counts(std::min(batch, frames) * frame_elems * es);
    std::vector<float> record(kRawRows * kCols);
    if (progress) progress(0.0);
    for (std::size_t first = 0; first < frames; first += batch) {
      const std::size_t n = std::min(batch, frames - first);
      simulate_frames(s, first, n, counts.data());
      for (std::size_t k = 0; k < n; ++k) {
        const std::uint8_t* in = counts.data() + k * frame_elems * es;
        if (es == 1) widen<std::uint8_t>(in, frame_elems, record.data());
        else if (es == 2) widen<std::uint16_t>(in, frame_elems, record.data());
        else widen<std::uint32_t>(in, frame_elems, record.data());
        const std::size_t frame = first + k;
        for (std::size_t j = 0; j < nans; ++j)
          if ((j * 7919) % frames == frame)
            record[((j * 37) % kRows) * kCols + (j * 53) % kCols] = std::numeric_limits<float>::quiet_NaN();
        for (std::size_t i = frame_elems; i < record.size(); ++i) record[i] = float(frame);  // the footer rows
        // Little-endian float32 on disk (the hosts we build for are little-endian).
        if (std::fwrite(record.data(), sizeof(float), record.size(), f) != record.size())
          throw IoError("cannot write '" + raw_path + "'");
      }
      if (progress) progress(double(first + n) / double(frames));
    }
  }, "sample output");
  char hv[64];
  std::snprintf(hv, sizeof hv, "%.1f", s.energy_kev * 1e3);
  const std::string text =
      "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n"
      "<root name=\"" + xml_escaped(xml.stem().string()) + "\">"
      "<software_version>quantem-gpu sample</software_version>"
      "<raw_file filename=\"" + xml_escaped(raw_name) + "\"/>"
      "<scan_parameters mode=\"acquire\"><scan_resolution_y>" + std::to_string(s.scan_rows) +
      "</scan_resolution_y><scan_resolution_x>" + std::to_string(s.scan_cols) + "</scan_resolution_x></scan_parameters>"
      "<iom_measurements><high_voltage>" + hv + "</high_voltage></iom_measurements>"
      "</root>\n";
  write_file_atomically(path, text, "sample output");
  return {path, raw_path};
}

}  // namespace qgpu::sample
