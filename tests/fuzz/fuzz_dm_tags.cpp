// libFuzzer target for the Gatan DM3 / DM4 tag tree parser and the reader's description of it (io/dm): any bytes
// must end in a TagTree and a FileInfo, or a FormatError / DTypeError naming the problem (never a crash, hang, deep
// recursion, out-of-bounds read or an allocation of the sizes a file states).
#include <cstddef>
#include <cstdint>

#include "core/error.hpp"
#include "io/dm/dm_reader.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace qgpu::io;
  dm::is_dm_head(data, size < 512 ? size : 512);
  try {
    const dm::TagTree t = dm::parse_tags(data, size, "fuzz.dm4");
    SourceOptions o;
    o.need = ScanShapeNeed::optional;
    const FileInfo fi = dm::describe_dm(t, "fuzz.dm4", o);
    (void)fi.metadata.dump();
    (void)fi.calibration_detail.dump();
  } catch (const qgpu::FormatError&) {
  } catch (const qgpu::DTypeError&) {
  }
  return 0;
}
