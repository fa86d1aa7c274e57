#pragma once
// Electron-event (sparse) acquisitions: every frame is a list of hit pixels, not a record of counts. Readers
// (io/sparse/) describe where the events lie; the load (io/sparse/load_sparse.hpp) scatters them into the dense
// resident with the load's scan / detector regions, bins and pixel mask (the encoded resident is made from it).
#include <cstdint>
#include <string>
#include <vector>

namespace qgpu::io {

struct SparseSource {
  std::string kind;  // "" (not sparse) | "stempy" | "libertem_csr" | "frame_positions"
  bool present() const { return !kind.empty(); }
  // stempy HDF5: electron_events/frames (vlen uint32 flat pixel indices per stored frame) and, before version 3,
  // electron_events/scan_positions (the flat scan position of each stored frame; several frames of one position
  // are summed). Version >= 3: frames_per_position consecutive frames per position, positions in order.
  std::string frames_dataset, positions_dataset;
  int version = 0;
  std::uint64_t stored_frames = 0;
  std::uint64_t frames_per_position = 0;  // version >= 3
  // LiberTEM raw CSR (TOML): rows = flattened scan positions, columns = flattened detector pixels.
  std::string indptr_file, indices_file, values_file;
  std::string indptr_dtype, indices_dtype, values_dtype;  // numpy descrs: <i4, <u8, <f4 ...
  std::uint64_t rows = 0, nnz = 0;
  // "frame_positions": dense frames of one record run (records.runs[0]) whose scan positions are listed (a Direct
  // Electron random / ROI / custom scan): frame i is added at positions[i]; positions never listed stay empty and are
  // named in the load's metadata (missing_positions), a position listed twice holds the sum of its frames.
  std::vector<std::uint64_t> positions;
};

}  // namespace qgpu::io
