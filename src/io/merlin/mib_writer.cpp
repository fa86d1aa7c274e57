#include "io/merlin/mib_writer.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <memory>
#include <mutex>

#include "core/atomic_output.hpp"
#include "core/checked.hpp"
#include "core/error.hpp"
#include "core/parallel_for.hpp"
#include "io/merlin/mib_decode.hpp"

namespace qgpu::io::merlin {

namespace {

namespace fs = std::filesystem;

constexpr double kThresholds[8] = {2.0, 511.0, 0, 0, 0, 0, 0, 0};
constexpr int kDacs[27] = {11, 511, 0, 0, 0, 0, 0, 0, 175, 10, 200, 125, 100, 100,
                           93, 100, 99, 30, 128, 4, 255, 140, 128, 191, 179, 511, 511};

// "2.000000E+0", "5.110000E+2": the detector's threshold notation (exponent without padding).
std::string sci(double v) {
  int e = 0;
  if (v != 0) e = int(std::floor(std::log10(std::fabs(v))));
  char buf[48];
  std::snprintf(buf, sizeof(buf), "%.6fE%+d", v / std::pow(10.0, e), e);
  return buf;
}

// Time of frame k: 2026-01-01 00:00:00 plus k exposures; date/time parts.
struct Stamp {
  int day, h, m, s;
  long long ns;
};
Stamp stamp(std::uint64_t sequence, std::uint64_t exposure_ns) {
  const unsigned long long t = (sequence - 1) * exposure_ns;
  const unsigned long long sec = t / 1000000000ull;
  return {int(1 + (sec / 86400) % 28), int(sec / 3600 % 24), int(sec / 60 % 60), int(sec % 60),
          (long long)(t % 1000000000ull)};
}

std::uint32_t side_of_quad(const MibWriteSpec& s) {
  const std::uint32_t g = s.gap ? 2 : 0;
  if (s.rows != s.cols || s.rows <= g || (s.rows - g) % 2)
    throw InvalidArgument("Merlin writer: a quad frame is square, 2 x chip side" + std::string(s.gap ? " + 2" : "") +
                          " (512x512, 514x514 with the gap); got " + std::to_string(s.rows) + "x" +
                          std::to_string(s.cols));
  return (s.rows - g) / 2;
}

// Runs f(i) for i in [0, n) on every core; rethrows the first exception after all threads joined.
template <class F> void parallel_for_rethrow(std::size_t n, F&& f) {
  std::mutex m;
  std::exception_ptr first;
  parallel_for(n, [&](std::size_t i) {
    try {
      f(i);
    } catch (...) {
      std::lock_guard<std::mutex> lock(m);
      if (!first) first = std::current_exception();
    }
  });
  if (first) std::rethrow_exception(first);
}

}  // namespace

FrameHeader writer_header(const MibWriteSpec& spec, std::uint64_t sequence) {
  const std::uint32_t d = spec.counter_depth;
  if (d != 1 && d != 6 && d != 12 && d != 24)
    throw InvalidArgument("Merlin writer: counter depth " + std::to_string(d) + " is not 1, 6, 12 or 24");
  if (spec.gap && !spec.quad) throw InvalidArgument("Merlin writer: the gap layout (2x2G) needs a quad");
  if (spec.rows == 0 || spec.cols == 0) throw InvalidArgument("Merlin writer: empty frame");
  FrameHeader h;
  h.sequence = sequence;
  h.chips = spec.quad ? 4 : 1;
  h.header_bytes = spec.quad ? 768 : 384;
  h.layout = spec.quad ? (spec.gap ? Layout::L2x2G : Layout::L2x2) : Layout::L1x1;
  h.layout_n = h.chips;
  h.chip_select = spec.quad ? 0x0f : 0x01;
  h.pixel_type = spec.raw ? PixelType::R64 : d <= 6 ? PixelType::U08 : d == 12 ? PixelType::U16 : PixelType::U32;
  if (spec.quad) side_of_quad(spec);  // quad frames: 2s x 2s (+2 with the gap), binary or raw
  if (!spec.raw) {
    h.width = spec.cols;
    h.height = spec.rows;
  } else if (!spec.quad) {
    h.width = spec.cols * (d == 24 ? 2 : 1);
    h.height = spec.rows;
  } else {
    const std::uint32_t s = side_of_quad(spec);
    h.width = 4 * s * (d == 24 ? 2 : 1);
    h.height = s;
  }
  const Stamp t = stamp(sequence, spec.exposure_ns);
  char buf[64];
  std::snprintf(buf, sizeof(buf), "2026-01-%02d %02d:%02d:%02d.%06lld", t.day, t.h, t.m, t.s, t.ns / 1000);
  h.timestamp = buf;
  std::snprintf(buf, sizeof(buf), "2026-01-%02dT%02d:%02d:%02d.%09lldZ", t.day, t.h, t.m, t.s, t.ns);
  h.timestamp_ns = buf;
  h.shutter_s = double(spec.exposure_ns) * 1e-9;
  h.thresholds_kev.assign(std::begin(kThresholds), std::end(kThresholds));
  h.dac_blocks = h.chips;
  h.chip_type = "3RX";
  h.mq1a = true;
  h.exposure_ns = spec.exposure_ns;
  h.counter_depth = d;
  return h;
}

PixelFormat writer_format(const MibWriteSpec& spec) {
  const FrameHeader h = writer_header(spec, 1);
  try {
    PixelFormat f = pixel_format(h, 0, Where{"(writer)", 0, 0});
    if (f.rows != spec.rows || f.cols != spec.cols)
      throw InvalidArgument("Merlin writer: the format gives " + std::to_string(f.rows) + "x" +
                            std::to_string(f.cols) + " frames, not the " + std::to_string(spec.rows) + "x" +
                            std::to_string(spec.cols) + " asked");
    return f;
  } catch (const FormatError& e) {
    throw InvalidArgument(std::string("Merlin writer: a reader would refuse this format: ") + e.what());
  }
}

std::string format_frame_header(const FrameHeader& h) {
  char buf[128];
  std::string t;
  std::snprintf(buf, sizeof(buf), "MQ1,%06llu,%05u,%02u,%04u,%04u,%s,%6s,%02X,", (unsigned long long)h.sequence,
                h.header_bytes, h.chips, h.width, h.height, pixel_type_name(h.pixel_type),
                (h.layout == Layout::Nx1 || h.layout == Layout::Nx1G) && h.layout_n > 0
                    ? (std::to_string(h.layout_n) + (h.layout == Layout::Nx1G ? "x1G" : "x1")).c_str()
                    : layout_name(h.layout),
                h.chip_select);
  t += buf;
  std::snprintf(buf, sizeof(buf), "%s,%.6f,%lld,%lld,%lld,", h.timestamp.c_str(), h.shutter_s, (long long)h.counter,
                (long long)h.colour_mode, (long long)h.gain_mode);
  t += buf;
  for (double v : h.thresholds_kev) t += sci(v) + ",";
  for (std::uint32_t c = 0; c < h.dac_blocks; ++c) {
    t += h.chip_type + ",";
    for (int v : kDacs) {
      std::snprintf(buf, sizeof(buf), "%03d,", v);
      t += buf;
    }
  }
  if (h.mq1a) {
    std::snprintf(buf, sizeof(buf), "MQ1A,%s,%lluns,%u,", h.timestamp_ns.c_str(), (unsigned long long)h.exposure_ns,
                  h.counter_depth);
    t += buf;
  }
  if (t.size() >= h.header_bytes)
    throw InvalidArgument("Merlin writer: header text of " + std::to_string(t.size()) + " bytes does not fit " +
                          std::to_string(h.header_bytes));
  t.resize(h.header_bytes, '\0');
  return t;
}

std::string format_acquisition_header(const MibWriteSpec& spec, std::uint64_t frames, std::uint64_t fpt,
                                      std::uint64_t scan_x, std::uint64_t scan_y,
                                      const std::vector<std::pair<std::string, std::string>>& extra) {
  const std::uint32_t chips = spec.quad ? 4 : 1;
  std::string dacs, ids, thresholds;
  for (std::uint32_t c = 0; c < chips; ++c) {
    if (c) dacs += "; ", ids += ",";
    for (std::size_t i = 0; i < std::size(kDacs); ++i) {
      char b[8];
      std::snprintf(b, sizeof(b), i ? ",%03d" : "%03d", kDacs[i]);
      dacs += b;
    }
    ids += "QGPU_";
    ids += char('A' + c);
    ids += "1";
  }
  for (std::size_t i = 0; i < std::size(kThresholds); ++i) {
    if (i) thresholds += ",";
    thresholds += sci(kThresholds[i]);
  }
  std::vector<std::pair<std::string, std::string>> e = {
      {"Time and Date Stamp (day, mnth, yr, hr, min, s)", "01/01/2026 00:00:00"},
      {"Chip ID", ids},
      {"Chip Type (Medipix 3.0, Medipix 3.1, Medipix 3RX)", "Medipix 3RX"},
      {"Assembly Size (NX1, 2X2)", spec.quad ? "   2x2" : "   1x1"},
      {"Chip Mode  (SPM, CSM, CM, CSCM)", "SPM"},
      {"Counter Depth (number)", std::to_string(spec.counter_depth)},
      {"Gain", "SLGM"},
      {"Active Counters", "Counter 0"},
      {"Thresholds (keV)", thresholds},
      {"DACs", dacs},
      {"Gap Fill Mode", spec.gap ? "Zero" : "None"},
      {"Flat Field File", "None"},
      {"Acquisition Type (Normal, Th_scan, Config)", "Normal"},
      {"Frames in Acquisition (Number)", std::to_string(frames)},
      {"Frames per Trigger (Number)", std::to_string(fpt)},
      {"Trigger Start (Positive, Negative, Internal)", "Positive"},
      {"Trigger Stop (Positive, Negative, Internal)", "Internal"},
      {"Readout System", spec.quad ? "Merlin Quad" : "Merlin"},
      {"Software Version", "qgpu sample (simulated)"},
  };
  if (scan_x && scan_y) {
    e.emplace_back("ScanX", std::to_string(scan_x));
    e.emplace_back("ScanY", std::to_string(scan_y));
  }
  e.insert(e.end(), extra.begin(), extra.end());
  std::string t = "HDR,\t\r\n";
  for (const auto& [k, v] : e) t += k + ":\t" + v + "\r\n";
  t += "End\t";
  if (t.size() < 2048) t.resize(2048, ' ');
  return t;
}

std::vector<std::string> write_mib_acquisition(const std::string& path, const MibWriteSpec& spec,
                                               std::uint64_t scan_rows, std::uint64_t scan_cols, std::size_t files,
                                               const FrameFill& fill, const std::function<void(double)>& progress) {
  const PixelFormat f = writer_format(spec);
  const std::uint64_t frames = checked_mul<InvalidArgument>(scan_rows, scan_cols, "Merlin writer: scan frames");
  if (frames == 0) throw InvalidArgument("Merlin writer: empty scan");
  if (files > frames)
    throw InvalidArgument("Merlin writer: files must be between 1 and the " + std::to_string(frames) +
                          " frames of the scan");
  const std::size_t n_files = std::max<std::size_t>(files, 1);
  const std::uint64_t per_file = (frames + n_files - 1) / n_files;
  const std::uint64_t used_files = (frames + per_file - 1) / per_file;
  const fs::path p(path);
  const fs::path stem = p.parent_path() / p.stem();
  const std::uint64_t out_bytes = f.frame_bytes_out();
  const std::uint64_t rec_bytes = checked_add<InvalidArgument>(writer_header(spec, 1).header_bytes, f.payload_bytes,
                                                               "Merlin writer: frame bytes");
  const std::uint64_t batch = std::max<std::uint64_t>(1, (std::uint64_t(128) << 20) / std::max(out_bytes, rec_bytes));
  std::vector<std::string> written;
  std::uint64_t done = 0;
  for (std::uint64_t k = 0; k < used_files; ++k) {
    char num[32];
    std::snprintf(num, sizeof(num), "_%06llu.mib", (unsigned long long)(k + 1));
    const std::string name = used_files == 1 && files <= 1 ? path : stem.string() + num;
    const std::uint64_t first = k * per_file, count = std::min(per_file, frames - first);
    std::vector<std::uint8_t> decoded, records;
    write_file_atomically(name, [&](std::FILE* out) {
    for (std::uint64_t b0 = 0; b0 < count; b0 += batch) {
      const std::uint64_t n = std::min(batch, count - b0);
      decoded.resize(n * out_bytes);
      records.resize(n * rec_bytes);
      fill(first + b0, n, decoded.data());
      parallel_for_rethrow(n, [&](std::size_t i) {
        const std::string head = format_frame_header(writer_header(spec, first + b0 + i + 1));
        std::copy(head.begin(), head.end(), records.begin() + i * rec_bytes);
        encode_frame_host(f, decoded.data() + i * out_bytes, records.data() + i * rec_bytes + head.size());
      });
      if (std::fwrite(records.data(), 1, records.size(), out) != records.size())
        throw IoError("cannot write frames to '" + name + "'");
      done += n;
      if (progress) progress(double(done) / double(frames));
    }
    }, "Merlin sample");
    written.push_back(name);
  }
  const std::string hdr_name = stem.string() + ".hdr";
  const std::string hdr = format_acquisition_header(spec, frames, scan_cols);
  write_file_atomically(hdr_name, hdr, "Merlin sample header");
  written.push_back(hdr_name);
  return written;
}

}  // namespace qgpu::io::merlin
