#pragma once
// The chunk grid of a dataset and the table being filled: index readers hand over each chunk they find, by its
// scaled coordinates (chunk numbers per dimension) or by its linear index over the grid of the maximum dims.
#include <cstdint>
#include <vector>

#include "io/hdf5/index/chunk_table.hpp"
#include "io/hdf5/index/decode.hpp"

namespace qgpu::io::h5index {

// HDF5's rule for chunked datasets (H5Pset_chunk, dataset creation): a chunk dimension may exceed neither a fixed
// maximum dimension of a non-empty dataset, nor be 0. A layout breaking it comes only from damage, and reading it
// through the HDF5 library crashes it (a chunk wider than the frame: SIGSEGV in H5Dread, issue 25). FormatError
// naming the dimension.
void check_chunk_dims(const std::vector<std::uint64_t>& dims, const std::vector<std::uint64_t>& max_dims,
                      const std::vector<std::uint64_t>& chunk_dims);

// Bytes of a chunk stored raw: the product of the chunk dims and the element size; FormatError when it overflows.
std::uint64_t raw_chunk_bytes(const std::vector<std::uint64_t>& chunk_dims, std::uint64_t element_size);

class ChunkGrid {
 public:
  static constexpr std::size_t kMaxRank = 32;  // H5S_MAX_RANK
  // dims/max_dims: dataset extent (max ~0 = unlimited); chunk_dims: per dimension. FormatError when the grid has
  // more than max_chunks chunks.
  ChunkGrid(const std::vector<std::uint64_t>& dims, const std::vector<std::uint64_t>& max_dims,
            const std::vector<std::uint64_t>& chunk_dims, std::uint64_t max_chunks, std::uint64_t file_size,
            const FileSizes& sizes);

  std::size_t rank() const { return grid_.size(); }
  std::uint64_t count() const { return table_.size(); }
  const std::vector<std::uint64_t>& grid() const { return grid_; }          // chunks per dim (current extent)
  const std::vector<std::uint64_t>& max_grid() const { return max_grid_; }  // chunks per dim (max extent; 0 = unlimited)
  // Product of max_grid (all dims fixed); FormatError when it overflows.
  std::uint64_t max_count() const;
  // The chunks of an unfiltered dataset must hold exactly raw_bytes: HDF5 reads raw_bytes from the chunk's address
  // whatever size the index records, so a shorter one would be padded with the bytes that follow it in the file
  // (issue 25).
  void expect_raw_size(std::uint64_t raw_bytes) { raw_bytes_ = raw_bytes; }

  // Records a chunk at relative address `addr` (undefined address = not allocated, ignored). Chunks outside the
  // current extent are ignored (left over after a shrink). FormatError on a chunk listed twice or beyond EOF.
  // Several threads may put at once when they put distinct chunks (each writes only its own table entry).
  void put(const std::uint64_t* scaled, std::uint64_t addr, std::uint64_t size, std::uint32_t mask) {
    if (addr == undefined_) return;
    std::uint64_t idx = 0;
    for (std::size_t i = 0; i < grid_.size(); ++i) {
      if (scaled[i] >= grid_[i]) return;
      idx = idx * grid_[i] + scaled[i];
    }
    put_index(idx, addr, size, mask);
  }
  // The same by table index (row-major over the current grid); beyond the table: ignored when outside_ok (chunk
  // beyond the current extent), FormatError otherwise.
  void put_index(std::uint64_t idx, std::uint64_t addr, std::uint64_t size, std::uint32_t mask,
                 bool outside_ok = false) {
    if (addr == undefined_) return;
    if (idx >= table_.size()) {
      if (outside_ok) return;
      corrupt("chunk index entry beyond the dataset extent");
    }
    ChunkLocation& loc = table_[static_cast<std::size_t>(idx)];
    const std::uint64_t offset = addr + sizes_.base;
    if (loc.size != 0 || size == 0 || (raw_bytes_ != 0 && size != raw_bytes_) || offset < addr ||
        offset > file_size_ || size > file_size_ - offset)
      bad_chunk(idx, addr, size);
    loc = {offset, size, mask};
  }
  // True when the linear order over the grid with dim 0 unbounded equals the table order (all other dims equal).
  bool rows_match_max_grid() const;
  // The same by linear index over max_grid (fixed array, implicit index). Thread-safe as put.
  void put_linear(std::uint64_t idx, std::uint64_t addr, std::uint64_t size, std::uint32_t mask);

  ChunkLocations take() { return std::move(table_); }

 private:
  [[noreturn]] void bad_chunk(std::uint64_t idx, std::uint64_t addr, std::uint64_t size) const;  // names the fault

  std::vector<std::uint64_t> grid_, max_grid_;
  ChunkLocations table_;
  bool same_grids_ = false;  // max_grid == grid: linear index = table index
  std::uint64_t file_size_;
  FileSizes sizes_;
  std::uint64_t undefined_;
  std::uint64_t raw_bytes_ = 0;  // 0: not checked (a filtered dataset)
};

}  // namespace qgpu::io::h5index
