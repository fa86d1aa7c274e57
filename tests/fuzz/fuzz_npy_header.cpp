// libFuzzer target for the NumPy .npy header parser (io/npy/npy_reader.cpp): any bytes as the start of a file must
// end in a parsed header or a FormatError/DTypeError naming the problem: never a crash, hang or out-of-bounds read.
#include <cstddef>
#include <cstdint>

#include "core/error.hpp"
#include "io/npy/npy_reader.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace qgpu::io::npy;
  try {
    const NpyHeader h = parse_header(data, size, "fuzz");
    bool big = false;
    dtype_of_descr(h.descr, big, "fuzz");
  } catch (const qgpu::FormatError&) {
  } catch (const qgpu::DTypeError&) {
  }
  return 0;
}
