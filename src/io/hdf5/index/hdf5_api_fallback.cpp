#include "io/hdf5/index/hdf5_api_fallback.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "core/error.hpp"
#include "io/hdf5/h5_handle.hpp"
#include "io/hdf5/index/chunk_grid.hpp"
#include "io/hdf5/index/parse_chunk_index.hpp"

namespace qgpu::io::h5index {

void fill_from_hdf5_api(hid_t dataset, ChunkTable& t, std::uint64_t base_addr, const std::string& why) {
  t.method = "hdf5 api: " + why;
  const std::size_t rank = t.dims.size();
  std::vector<std::uint64_t> grid(rank);
  std::uint64_t count = 1;
  for (std::size_t i = 0; i < rank; ++i) {
    grid[i] = (t.dims[i] + t.chunk_dims[i] - 1) / t.chunk_dims[i];
    if (__builtin_mul_overflow(count, grid[i], &count)) throw FormatError("chunk count of '" + t.dataset_path +
                                                                           "' overflows");
  }
  if (count > kMaxTableChunks)
    throw FormatError("'" + t.dataset_path + "' has " + std::to_string(count) + " chunks, more than the " +
                      std::to_string(kMaxTableChunks) + " a chunk table holds");
  t.chunks.assign(static_cast<std::size_t>(count), ChunkLocation{});
#if H5_VERSION_GE(1, 12, 3) || (H5_VERSION_GE(1, 10, 10) && !H5_VERSION_GE(1, 11, 0))
  // One pass over the index (H5Dchunk_iter).
  struct Walk {
    ChunkTable& t;
    const std::vector<std::uint64_t>& grid;
    std::uint64_t base;
  } walk{t, grid, base_addr};
  auto visit = [](const hsize_t* offset, unsigned mask, haddr_t addr, hsize_t size, void* data) -> int {
    auto& w = *static_cast<Walk*>(data);
    std::uint64_t idx = 0;
    for (std::size_t d = 0; d < w.grid.size(); ++d) {
      const std::uint64_t s = offset[d] / w.t.chunk_dims[d];
      if (s >= w.grid[d]) return 0;
      idx = idx * w.grid[d] + s;
    }
    if (addr != HADDR_UNDEF) w.t.chunks[static_cast<std::size_t>(idx)] = {w.base + addr, size, mask};
    return 0;
  };
  if (H5Dchunk_iter(dataset, H5P_DEFAULT, visit, &walk) < 0)
    throw FormatError("cannot walk the chunk index of '" + t.dataset_path + "' in '" + t.file + "'");
#elif H5_VERSION_GE(1, 10, 5)
  // One H5Dget_chunk_info call per chunk: each walks the index (quadratic in the chunk count).
  hsize_t n = 0;
  const hid_t space = H5Dget_space(dataset);  // (HDF5 1.10 does not take H5S_ALL here)
  struct CloseSpace {
    hid_t id;
    ~CloseSpace() { H5Sclose(id); }
  } close_space{space};
  if (H5Dget_num_chunks(dataset, space, &n) < 0)
    throw FormatError("cannot count the chunks of '" + t.dataset_path + "' in '" + t.file + "'");
  std::vector<hsize_t> offset(rank);
  for (hsize_t i = 0; i < n; ++i) {
    unsigned mask = 0;
    haddr_t addr = 0;
    hsize_t size = 0;
    if (H5Dget_chunk_info(dataset, space, i, offset.data(), &mask, &addr, &size) < 0)
      throw FormatError("cannot read chunk " + std::to_string(i) + " of the index of '" + t.dataset_path + "' in '" +
                        t.file + "'");
    std::uint64_t idx = 0;
    bool inside = true;
    for (std::size_t d = 0; d < rank; ++d) {
      const std::uint64_t s = offset[d] / t.chunk_dims[d];
      inside = inside && s < grid[d];
      idx = idx * grid[d] + s;
    }
    if (inside && addr != HADDR_UNDEF) t.chunks[static_cast<std::size_t>(idx)] = {base_addr + addr, size, mask};
  }
#else
  (void)dataset;
  (void)base_addr;
  throw FormatError("cannot read the chunk index of '" + t.dataset_path + "' (" + why +
                    ") and this HDF5 library has no H5Dget_chunk_info");
#endif
  check_table(dataset, t);
}

void check_table(hid_t dataset, const ChunkTable& t) {
  struct stat st {};
  if (::stat(t.file.c_str(), &st) != 0) throw IoError("cannot stat '" + t.file + "': " + std::strerror(errno));
  const std::uint64_t file_size = std::uint64_t(st.st_size);
  h5::QuietErrors quiet;
  h5::Handle dcpl(H5Dget_create_plist(dataset), H5Pclose);
  h5::Handle type(H5Dget_type(dataset), H5Tclose);
  const int filters = dcpl.valid() ? H5Pget_nfilters(dcpl) : -1;
  const std::size_t elem = type.valid() ? H5Tget_size(type) : 0;
  const std::uint64_t raw = elem ? raw_chunk_bytes(t.chunk_dims, elem) : 0;
  for (std::size_t i = 0; i < t.chunks.size(); ++i) {
    const ChunkLocation& c = t.chunks[i];
    if (c.size == 0) continue;  // never written
    if (c.offset > file_size || c.size > file_size - c.offset)
      corrupt("chunk " + std::to_string(i) + " (byte " + std::to_string(c.offset) + ", " + std::to_string(c.size) +
              " bytes) lies beyond the end of the file (" + std::to_string(file_size) + " bytes; truncated?)");
    if (raw && filters == 0 && c.size != raw)
      corrupt("chunk " + std::to_string(i) + " is stored unfiltered in " + std::to_string(c.size) +
              " bytes; an unfiltered chunk holds " + std::to_string(raw));
  }
}

}  // namespace qgpu::io::h5index
