#include "io/hdf5/chunk_index.hpp"

#include "core/error.hpp"

namespace qgpu::io {

ChunkReader::ChunkReader(const FileInfo& info) : info_(info) {
  if (!info.one_frame_per_chunk)
    throw FormatError("dataset '" + info.dataset_path + "' in '" + info.path +
                      "' is not stored one frame per chunk; direct chunk reads need that layout");
  file_ = h5::open_file(info.path);
  ds_ = h5::open_dataset(file_, info.dataset_path, info.path);
}

std::vector<hsize_t> ChunkReader::coord(std::uint64_t frame) const {
  std::vector<hsize_t> c(info_.dims.size(), 0);
  if (info_.dims.size() == 4) {
    c[0] = frame / info_.shape.scan_cols;
    c[1] = frame % info_.shape.scan_cols;
  } else {
    c[0] = frame;
  }
  return c;
}

std::uint64_t ChunkReader::size(std::uint64_t frame) const {
  const std::vector<hsize_t> c = coord(frame);
  hsize_t bytes = 0;
  h5::QuietErrors quiet;
  if (H5Dget_chunk_storage_size(ds_, c.data(), &bytes) < 0 || bytes == 0)
    throw FormatError("frame " + std::to_string(frame) + " of '" + info_.dataset_path + "' in '" + info_.path +
                      "' has no stored chunk (file incomplete or still being written)");
  return bytes;
}

void ChunkReader::read(std::uint64_t frame, void* dst) const {
  const std::vector<hsize_t> c = coord(frame);
  std::uint32_t mask = 0;
  h5::QuietErrors quiet;
  if (H5Dread_chunk(ds_, H5P_DEFAULT, c.data(), &mask, dst) < 0)
    throw FormatError("cannot read the stored chunk of frame " + std::to_string(frame) + " of '" +
                      info_.dataset_path + "' in '" + info_.path + "' (truncated file?)");
  if (mask != 0)
    throw FormatError("frame " + std::to_string(frame) + " of '" + info_.dataset_path + "' in '" + info_.path +
                      "' was stored without its filter (filter mask " + std::to_string(mask) +
                      "); load it with backend='cpu'");
}

}  // namespace qgpu::io
