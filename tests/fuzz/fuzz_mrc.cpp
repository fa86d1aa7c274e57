// libFuzzer target for the MRC reader (io/mrc/mrc_reader.cpp): the header, the FEI1 / FEI2 / legacy FEI extended
// header, a Direct Electron <id>_info.txt and <id>_scan_coordinates.csv (a custom scan placing frames at listed
// positions). The input's parts (fuzz_sidecar_files.hpp): the .mrc bytes, then optionally the info.txt, then
// optionally the csv, written as f_movie.mrc, f_info.txt, f_scan_coordinates.csv. Any bytes must end in a FileInfo
// or a typed qgpu::Error naming the problem (never a crash, hang, huge allocation or out-of-bounds read).
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/error.hpp"
#include "fuzz_sidecar_files.hpp"
#include "io/mrc/mrc_reader.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace qgpu;
  const auto parts = fuzz::split_parts(data, size);
  const std::string& mrc = parts[0];
  io::mrc::is_mrc_head(reinterpret_cast<const std::uint8_t*>(mrc.data()), mrc.size());
  try {
    io::mrc::parse_header(reinterpret_cast<const std::uint8_t*>(mrc.data()), mrc.size(), mrc.size(), "fuzz");
  } catch (const Error&) {
  }
  fuzz::put_file("f_movie.mrc", mrc);
  fuzz::put_file("f_info.txt", parts.size() > 1 ? parts[1] : "", parts.size() > 1);
  fuzz::put_file("f_scan_coordinates.csv", parts.size() > 2 ? parts[2] : "", parts.size() > 2);
  const std::string path = fuzz::scratch_dir() + "/f_movie.mrc";
  for (int pass = 0; pass < 2; ++pass) {
    io::SourceOptions o;
    o.need = pass == 0 ? io::ScanShapeNeed::optional : io::ScanShapeNeed::required;
    if (pass == 1 && mrc.size() > 1024 && (mrc[1023] & 1)) o.scan_rows = o.scan_cols = std::size_t(mrc[1023] & 7);
    try {
      const io::FileInfo fi = io::mrc::inspect_mrc(path, o);
      (void)fi.metadata.dump();
      (void)fi.calibration_detail.dump();
    } catch (const Error&) {
    }
  }
  return 0;
}
