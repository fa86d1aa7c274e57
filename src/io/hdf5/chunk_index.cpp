#include "io/hdf5/chunk_index.hpp"

#include "core/error.hpp"
#include "io/hdf5/h5_handle.hpp"

namespace qgpu::io {

std::vector<ChunkLocation> locate_frame_chunks(const FileInfo& info, const std::vector<std::uint64_t>& frames) {
  if (!info.one_frame_per_chunk)
    throw FormatError("dataset '" + info.dataset_path + "' in '" + info.path +
                      "' is not stored one frame per chunk; direct chunk reads need that layout");
  h5::Handle file = h5::open_file(info.path);
  h5::Handle ds = h5::open_dataset(file, info.dataset_path, info.path);
  const int rank = static_cast<int>(info.dims.size());
  std::vector<ChunkLocation> out(frames.size());
  std::vector<hsize_t> coord(rank, 0);
  h5::QuietErrors quiet;
  for (std::size_t i = 0; i < frames.size(); ++i) {
    const std::uint64_t f = frames[i];
    if (rank == 4) {
      coord[0] = f / info.shape.scan_cols;
      coord[1] = f % info.shape.scan_cols;
    } else {
      coord[0] = f;
    }
    haddr_t addr = HADDR_UNDEF;
    hsize_t size = 0;
    unsigned mask = 0;
    if (H5Dget_chunk_info_by_coord(ds, coord.data(), &mask, &addr, &size) < 0 || addr == HADDR_UNDEF || size == 0)
      throw FormatError("frame " + std::to_string(f) + " of '" + info.dataset_path + "' in '" + info.path +
                        "' has no stored chunk (file incomplete or still being written)");
    out[i] = {addr, size, mask};
  }
  return out;
}

}  // namespace qgpu::io
