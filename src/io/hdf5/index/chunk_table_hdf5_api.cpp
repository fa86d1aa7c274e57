// Chunk table through the HDF5 API (one H5Dget_chunk_info call per chunk): the stand-in until the index parser.
#include <hdf5.h>
#include "io/hdf5/index/chunk_table.hpp"
#include "io/hdf5/h5_handle.hpp"
#include "core/error.hpp"
namespace qgpu::io {
ChunkTable read_chunk_table(const std::string& file, const std::string& dataset_path) {
  h5::Handle f = h5::open_file(file);
  h5::Handle ds = h5::open_dataset(f, dataset_path, file);
  ChunkTable t; t.file = file; t.dataset_path = dataset_path; t.method = "hdf5 api: H5Dget_chunk_info per chunk";
  h5::Handle sp(H5Dget_space(ds), H5Sclose);
  int rank = H5Sget_simple_extent_ndims(sp);
  std::vector<hsize_t> d(rank), c(rank);
  H5Sget_simple_extent_dims(sp, d.data(), nullptr);
  h5::Handle dcpl(H5Dget_create_plist(ds), H5Pclose);
  H5Pget_chunk(dcpl, rank, c.data());
  t.dims.assign(d.begin(), d.end()); t.chunk_dims.assign(c.begin(), c.end());
  std::size_t n = 1; std::vector<hsize_t> grid(rank);
  for (int i = 0; i < rank; ++i) { grid[i] = (d[i] + c[i] - 1) / c[i]; n *= grid[i]; }
  t.chunks.resize(n);
  hsize_t nchunks = 0; H5Dget_num_chunks(ds, sp, &nchunks);
  for (hsize_t i = 0; i < nchunks; ++i) {
    std::vector<hsize_t> off(rank); unsigned mask = 0; haddr_t addr = 0; hsize_t size = 0;
    H5Dget_chunk_info(ds, sp, i, off.data(), &mask, &addr, &size);
    std::size_t lin = 0; for (int k = 0; k < rank; ++k) lin = lin * grid[k] + off[k] / c[k];
    t.chunks[lin] = {addr, size, mask};
  }
  return t;
}
}
