// libFuzzer target for the LiberTEM raw CSR descriptor (io/sparse/sparse_reader.cpp): the TOML subset parser, the
// content check and inspect_csr's checks of the three arrays against it. The input's parts
// (fuzz_sidecar_files.hpp): the TOML, then optionally the indptr, indices and data files, written as f.toml,
// indptr.raw, indices.raw, data.raw beside it. Any bytes must end in a FileInfo or a typed qgpu::Error naming the
// problem (never a crash, hang, huge allocation or out-of-bounds read).
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/error.hpp"
#include "fuzz_sidecar_files.hpp"
#include "io/sparse/sparse_reader.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace qgpu;
  const auto parts = fuzz::split_parts(data, size);
  io::sparse::is_csr_head(reinterpret_cast<const std::uint8_t*>(parts[0].data()), parts[0].size());
  fuzz::put_file("f.toml", parts[0]);
  const char* names[3] = {"indptr.raw", "indices.raw", "data.raw"};
  for (std::size_t i = 0; i < 3; ++i) fuzz::put_file(names[i], i + 1 < parts.size() ? parts[i + 1] : "", i + 1 < parts.size());
  for (int pass = 0; pass < 2; ++pass) {
    io::SourceOptions o;
    o.need = pass == 0 ? io::ScanShapeNeed::optional : io::ScanShapeNeed::required;
    if (pass == 1) o.scan_rows = o.scan_cols = 2;
    try {
      const io::FileInfo fi = io::sparse::inspect_csr(fuzz::scratch_dir() + "/f.toml", o);
      (void)fi.metadata.dump();
    } catch (const Error&) {
    }
  }
  return 0;
}
