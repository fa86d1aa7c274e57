// read_chunk_table: the HDF5 library opens the dataset (following soft, hard and external links) and tells where
// its object header lies; the index itself is then parsed from the file bytes in one pass.
#include "io/hdf5/index/chunk_table.hpp"

#include "core/error.hpp"
#include "io/hdf5/h5_handle.hpp"
#include "io/hdf5/index/chunk_grid.hpp"
#include "io/hdf5/index/dataset_location.hpp"
#include "io/hdf5/index/hdf5_api_fallback.hpp"

namespace qgpu::io {

ChunkTable read_chunk_table(const std::string& file, const std::string& dataset_path) {
  h5::Handle f = h5::open_file(file);
  h5::Handle ds = h5::open_dataset(f, dataset_path, file);
  return read_chunk_table(ds.get(), file, dataset_path);
}

ChunkTable read_chunk_table(hid_t ds, const std::string& file, const std::string& dataset_path) {
  h5::QuietErrors quiet;
  const std::string where = "dataset '" + dataset_path + "' in '" + file + "'";
  h5::Handle dcpl(H5Dget_create_plist(ds), H5Pclose);
  const H5D_layout_t layout = H5Pget_layout(dcpl);
  if (layout != H5D_CHUNKED)
    throw FormatError(where + " is not chunked (" +
                      (layout == H5D_CONTIGUOUS ? "contiguous" : layout == H5D_COMPACT ? "compact" : "virtual") +
                      " layout); it has no chunk index");

  ChunkTable t;
  h5::Handle space(H5Dget_space(ds), H5Sclose);
  const int rank = H5Sget_simple_extent_ndims(space);
  if (rank <= 0) throw FormatError(where + " has no simple dataspace");
  std::vector<hsize_t> dims(rank), max_dims(rank), chunk(rank);
  H5Sget_simple_extent_dims(space, dims.data(), max_dims.data());
  if (H5Pget_chunk(dcpl, rank, chunk.data()) != rank) throw FormatError(where + ": cannot read its chunk dims");
  t.dims.assign(dims.begin(), dims.end());
  t.chunk_dims.assign(chunk.begin(), chunk.end());
  std::vector<std::uint64_t> max(rank);
  for (int i = 0; i < rank; ++i) max[i] = max_dims[i] == H5S_UNLIMITED ? h5index::kUnlimited : max_dims[i];
  // Before any index is walked (ours or HDF5's): a chunk wider than the dataset is damage, and HDF5 crashes
  // reading it.
  try {
    h5index::check_chunk_dims(t.dims, max, t.chunk_dims);
  } catch (const FormatError& e) {
    throw FormatError(where + ": " + e.what());
  }

  const h5index::DatasetLocation loc = h5index::locate_dataset(ds);
  t.file = loc.file.empty() ? file : loc.file;
  t.dataset_path = loc.dataset_path.empty() ? dataset_path : loc.dataset_path;
  const std::uint64_t base = loc.request.sizes.base;
  // The HDF5 API's table gets the same checks as ours: chunks inside the file, raw chunks of their full size.
  auto fallback = [&](const std::string& why) {
    try {
      h5index::fill_from_hdf5_api(ds, t, base, why);
    } catch (const FormatError& e) {
      throw FormatError(where + ": " + e.what());
    }
    return t;
  };
  if (!loc.header_known) return fallback("object header address unknown");
  try {
    h5index::FileByteSource src(t.file);
    h5index::ParsedIndex p = h5index::parse_chunk_index(src, loc.request);
    if (p.dims != t.dims || p.chunk_dims != t.chunk_dims)
      return fallback("object header disagrees with the HDF5 library");
    t.chunks = std::move(p.chunks);
    t.method = "parsed: " + p.kind;
  } catch (const h5index::Unsupported& e) {
    return fallback(e.what());
  } catch (const FormatError& e) {
    throw FormatError(where + ": " + e.what());
  }
  return t;
}

}  // namespace qgpu::io
