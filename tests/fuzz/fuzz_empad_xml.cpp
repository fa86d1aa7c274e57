// libFuzzer target for the EMPAD .xml parsers (io/empad/empad_reader.cpp): any bytes as an xml must end in the
// EMPAD fields or a FormatError naming the problem (never a crash, hang, deep recursion or out-of-bounds read); the
// content check and the raw-name scan shape see the same bytes.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/error.hpp"
#include "io/empad/empad_reader.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace qgpu::io::empad;
  const std::string text(reinterpret_cast<const char*>(data), size);
  is_empad_head(data, size < 512 ? size : 512);
  scan_shape_from_raw_name(text);
  try {
    const EmpadXml x = parse_empad_xml(text, "fuzz.xml");
    (void)x.metadata.dump();
    (void)x.calibration.detail().dump();
  } catch (const qgpu::FormatError&) {
  }
  return 0;
}
