#include "io/hdf5/index/chunk_grid.hpp"

#include <array>
#include <cstring>
#include <string>

#include "core/parallel_for.hpp"

namespace qgpu::io::h5index {

void check_chunk_dims(const std::vector<std::uint64_t>& dims, const std::vector<std::uint64_t>& max_dims,
                      const std::vector<std::uint64_t>& chunk_dims) {
  if (dims.size() != chunk_dims.size() || max_dims.size() != dims.size())
    corrupt("dataspace rank " + std::to_string(dims.size()) + " differs from chunk rank " +
            std::to_string(chunk_dims.size()));
  for (std::size_t i = 0; i < dims.size(); ++i) {
    if (chunk_dims[i] == 0) corrupt("chunk dimension " + std::to_string(i) + " is 0");
    if (dims[i] != 0 && max_dims[i] != kUnlimited && chunk_dims[i] > max_dims[i])
      corrupt("chunk dimension " + std::to_string(i) + " is " + std::to_string(chunk_dims[i]) +
              " elements, larger than the dataset's fixed extent " + std::to_string(max_dims[i]) +
              " (HDF5 never writes such a layout: damaged layout message)");
  }
}

std::uint64_t raw_chunk_bytes(const std::vector<std::uint64_t>& chunk_dims, std::uint64_t element_size) {
  std::uint64_t bytes = element_size;
  for (std::uint64_t d : chunk_dims) bytes = checked_mul(bytes, d, "chunk byte size");
  return bytes;
}

ChunkGrid::ChunkGrid(const std::vector<std::uint64_t>& dims, const std::vector<std::uint64_t>& max_dims,
                     const std::vector<std::uint64_t>& chunk_dims, std::uint64_t max_chunks, std::uint64_t file_size,
                     const FileSizes& sizes)
    : file_size_(file_size), sizes_(sizes), undefined_(sizes.undefined()) {
  check_chunk_dims(dims, max_dims, chunk_dims);
  if (dims.size() > kMaxRank) corrupt("dataspace has rank " + std::to_string(dims.size()));
  std::uint64_t total = 1;
  for (std::size_t i = 0; i < dims.size(); ++i) {
    if (max_dims[i] != kUnlimited && max_dims[i] < dims[i]) corrupt("dataset dims exceed its maximum dims");
    grid_.push_back(dims[i] / chunk_dims[i] + (dims[i] % chunk_dims[i] != 0));
    max_grid_.push_back(max_dims[i] == kUnlimited ? 0 : max_dims[i] / chunk_dims[i] + (max_dims[i] % chunk_dims[i] != 0));
    total = checked_mul(total, grid_.back(), "chunk count");
  }
  if (total > max_chunks)
    corrupt("dataset has " + std::to_string(total) + " chunks, more than the " + std::to_string(max_chunks) +
            " a chunk table holds");
  // Zeroed on every core (an entry's size 0 = not found yet; 16.7M entries at 4096x4096 are 400 MB).
  table_.resize(static_cast<std::size_t>(total));
  advise_huge_pages(table_.data(), table_.size() * sizeof(ChunkLocation));  // 512x fewer faults
  parallel_blocks(table_.size(), std::size_t{1} << 16, [this](std::size_t i0, std::size_t i1) {
    std::memset(static_cast<void*>(table_.data() + i0), 0, (i1 - i0) * sizeof(ChunkLocation));
  });
  same_grids_ = max_grid_ == grid_;
}

std::uint64_t ChunkGrid::max_count() const {
  std::uint64_t n = 1;
  for (std::uint64_t g : max_grid_) {
    if (g == 0) corrupt("fixed-size chunk index on a dataset with an unlimited dimension");
    n = checked_mul(n, g, "chunk count of the maximum extent");
  }
  return n;
}

bool ChunkGrid::rows_match_max_grid() const {
  for (std::size_t i = 1; i < grid_.size(); ++i)
    if (grid_[i] != max_grid_[i]) return false;
  return true;
}

void ChunkGrid::bad_chunk(std::uint64_t idx, std::uint64_t addr, std::uint64_t size) const {
  const ChunkLocation& loc = table_[static_cast<std::size_t>(idx)];
  if (loc.size != 0) corrupt("chunk " + std::to_string(idx) + " is listed twice");
  if (size == 0) corrupt("chunk " + std::to_string(idx) + " has a stored size of 0");
  if (raw_bytes_ != 0 && size != raw_bytes_)
    corrupt("chunk " + std::to_string(idx) + " is stored unfiltered in " + std::to_string(size) +
            " bytes; an unfiltered chunk holds " + std::to_string(raw_bytes_) +
            (size < raw_bytes_ ? " (reading it would take the bytes that follow it in the file)" : ""));
  const std::uint64_t offset = checked_add(addr, sizes_.base, "chunk address");
  corrupt("chunk " + std::to_string(idx) + " (byte " + std::to_string(offset) + ", " + std::to_string(size) +
          " bytes) lies beyond the end of the file (" + std::to_string(file_size_) + " bytes; truncated?)");
}

void ChunkGrid::put_linear(std::uint64_t idx, std::uint64_t addr, std::uint64_t size, std::uint32_t mask) {
  if (addr == sizes_.undefined()) return;
  if (same_grids_) return put_index(idx, addr, size, mask);
  std::array<std::uint64_t, kMaxRank> scaled;  // (on the stack: several threads may put at once)
  for (std::size_t i = grid_.size(); i-- > 0;) {
    if (max_grid_[i] == 0) corrupt("linear chunk index on a dataset with an unlimited dimension");
    scaled[i] = idx % max_grid_[i];
    idx /= max_grid_[i];
  }
  if (idx != 0) corrupt("chunk index entry beyond the maximum extent");
  put(scaled.data(), addr, size, mask);
}

}  // namespace qgpu::io::h5index
