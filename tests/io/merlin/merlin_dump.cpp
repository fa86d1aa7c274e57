// merlin_dump PATH OUT_DIR [ROWS COLS]: opens a Merlin acquisition with our reader (io::merlin::scan_merlin),
// decodes every frame of the scan with the host decoder and writes OUT_DIR/frames.npy (frames, rows, cols; native
// dtype) and OUT_DIR/meta.json (the acquisition's metadata, format, scan shape, warnings, and every frame's header
// as our parser reads it). tests/io/merlin/test_merlin_numpy.py compares both with an independent numpy reading.
// On a reader error: prints "error: <type>: <message>" and exits 1.
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "io/merlin/acquisition.hpp"
#include "io/merlin/mib_decode.hpp"
#include "io/npy/npy.hpp"

namespace merlin = qgpu::io::merlin;

namespace {

std::vector<std::uint8_t> read_range(const std::string& path, std::uint64_t off, std::size_t n) {
  std::ifstream in(path, std::ios::binary);
  in.seekg(std::streamoff(off));
  std::vector<std::uint8_t> b(n);
  in.read(reinterpret_cast<char*>(b.data()), std::streamsize(n));
  if (!in) throw qgpu::IoError("cannot read " + std::to_string(n) + " bytes at " + std::to_string(off) + " of " + path);
  return b;
}

nlohmann::json header_json(const merlin::FrameHeader& h) {
  return {{"sequence", h.sequence},          {"header_bytes", h.header_bytes},
          {"chips", h.chips},                {"width", h.width},
          {"height", h.height},              {"pixel_type", merlin::pixel_type_name(h.pixel_type)},
          {"layout", merlin::layout_name(h.layout)}, {"chip_select", h.chip_select},
          {"timestamp", h.timestamp},        {"shutter_s", h.shutter_s},
          {"counter", h.counter},            {"colour_mode", h.colour_mode},
          {"gain_mode", h.gain_mode},        {"thresholds_kev", h.thresholds_kev},
          {"dac_blocks", h.dac_blocks},      {"chip_type", h.chip_type},
          {"mq1a", h.mq1a},                  {"timestamp_ns", h.timestamp_ns},
          {"exposure_ns", h.exposure_ns},    {"counter_depth", h.counter_depth}};
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3 && argc != 5) {
    std::fprintf(stderr, "usage: merlin_dump PATH OUT_DIR [ROWS COLS]\n");
    return 2;
  }
  const std::string out = argv[2];
  try {
    const std::size_t rows = argc == 5 ? std::stoul(argv[3]) : 0, cols = argc == 5 ? std::stoul(argv[4]) : 0;
    const merlin::MerlinAcquisition acq = merlin::scan_merlin(argv[1], rows, cols);
    const merlin::PixelFormat& f = acq.format;
    const std::size_t n = acq.frames.size(), frame_bytes = f.frame_bytes_out();
    std::vector<std::uint8_t> frames(n * frame_bytes);
    nlohmann::json headers = nlohmann::json::array();
    for (std::size_t k = 0; k < n; ++k) {
      const merlin::MerlinFrame& fr = acq.frames[k];
      const std::string& file = acq.files[fr.file];
      const auto rec = read_range(file, fr.offset - acq.header_bytes, acq.frame_bytes);
      merlin::verify_frame_header(acq, k, rec.data());
      const merlin::Where w{file, (fr.offset - acq.header_bytes) / acq.frame_bytes, fr.offset - acq.header_bytes};
      headers.push_back(header_json(merlin::parse_frame_header(rec.data(), acq.header_bytes, w)));
      headers.back()["file"] = file;
      headers.back()["payload_offset"] = fr.offset;
      merlin::decode_frame_host(f, rec.data() + acq.header_bytes, frames.data() + k * frame_bytes);
    }
    const std::string descr = f.out_dtype == qgpu::DType::u8 ? "|u1" : f.out_dtype == qgpu::DType::u16 ? "<u2" : "<u4";
    qgpu::io::write_npy(out + "/frames.npy", descr, {n, f.rows, f.cols}, frames.data(), frames.size());
    nlohmann::json meta = {{"metadata", acq.metadata},
                           {"files", acq.files},
                           {"frames_found", acq.frames_found},
                           {"frames", n},
                           {"header_bytes", acq.header_bytes},
                           {"frame_bytes", acq.frame_bytes},
                           {"format", {{"counter_depth", f.counter_depth}, {"raw", f.raw},
                                       {"layout", merlin::layout_name(f.layout)}, {"chips", f.chips},
                                       {"stored", merlin::pixel_type_name(f.stored)},
                                       {"payload_bytes", f.payload_bytes}, {"rows", f.rows}, {"cols", f.cols},
                                       {"chip", f.chip}, {"dtype", qgpu::dtype_name(f.out_dtype)}}},
                           {"scan_shape", {acq.scan_rows, acq.scan_cols}},
                           {"scan_shape_from", merlin::scan_shape_from_name(acq.scan_from)},
                           {"hdr_file", acq.hdr_file},
                           {"warnings", acq.warnings},
                           {"headers", headers}};
    std::ofstream(out + "/meta.json") << meta.dump(1) << "\n";
    std::printf("%zu frames %ux%u %s\n", n, f.rows, f.cols, qgpu::dtype_name(f.out_dtype).c_str());
    return 0;
  } catch (const qgpu::FormatError& e) {
    std::printf("error: FormatError: %s\n", e.what());
  } catch (const qgpu::IoError& e) {
    std::printf("error: IoError: %s\n", e.what());
  } catch (const qgpu::InvalidArgument& e) {
    std::printf("error: InvalidArgument: %s\n", e.what());
  } catch (const qgpu::Error& e) {
    std::printf("error: Error: %s\n", e.what());
  }
  return 1;
}
