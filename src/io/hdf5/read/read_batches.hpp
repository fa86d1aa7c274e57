#pragma once
// Batches of whole output scan rows, each read from the file(s) as a few large coalesced runs: neighbouring chunks
// of one file are read together (small gaps between them are read too and skipped), so a batch costs a handful of
// preads instead of one HDF5 call per chunk.
#include <cstdint>
#include <vector>

#include "io/hdf5/read/chunk_sources.hpp"

namespace qgpu::io {

struct ReadRun {
  std::uint32_t file = 0;
  std::uint64_t file_offset = 0;  // aligned to BatchLimits::align
  std::uint64_t bytes = 0;        // multiple of align (may reach past the end of the file for direct reads)
  std::uint64_t needed = 0;       // bytes that must exist in the file (<= bytes)
  std::uint64_t dst_offset = 0;   // in the batch buffer, aligned to align
};

struct ReadBatch {
  std::size_t first_chunk = 0, chunks = 0;  // range of ChunkSources::chunks (load order)
  std::size_t out_row0 = 0, out_rows = 0;   // output scan rows this batch produces
  std::vector<ReadRun> runs;
  std::vector<std::uint64_t> chunk_dst;     // where each chunk of the batch lies in the batch buffer
  std::uint64_t buffer_bytes = 0;           // batch buffer size needed
  std::uint64_t chunk_bytes = 0;            // sum of the stored chunk sizes
};

struct BatchLimits {
  std::uint64_t max_bytes = std::uint64_t(64) << 20;  // batch buffer bytes (a single output row may exceed it)
  std::uint64_t first_max_bytes = 0;                  // the first batch's, when smaller (0: max_bytes)
  // Batch i after the first: at most first_max_bytes x growth^i (up to max_bytes); 0: max_bytes at once
  double growth = 0;
  std::uint64_t max_frames = 0;                       // frames per batch (0 = no limit): staging capacity
  std::uint64_t max_gap = std::uint64_t(64) << 10;    // largest hole between chunks read through
  std::uint64_t align = 1;                            // 4096 for O_DIRECT reads
  // Output rows per batch a multiple of this where the batch ends early (a batch of whole encoder tiles; not the
  // last batch, nor a batch whose first row_multiple rows alone pass the limits)
  std::size_t row_multiple = 1;
};

// frames_per_out_row chunks make one output scan row; out_rows rows in all. From kParallelPlanFrom chunks (with
// align 1) planned on the process's waiting threads; the batches are those of plan_batches_sequential.
std::vector<ReadBatch> plan_batches(const ChunkSources& src, std::size_t frames_per_out_row, std::size_t out_rows,
                                    const BatchLimits& limits);
std::vector<ReadBatch> plan_batches_sequential(const ChunkSources& src, std::size_t frames_per_out_row,
                                               std::size_t out_rows, const BatchLimits& limits);
inline constexpr std::size_t kParallelPlanFrom = 16384;

}  // namespace qgpu::io
