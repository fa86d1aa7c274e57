#pragma once
// The read side of a load, shared by the GPU and the fast host load: every frame's chunk located, batches of whole
// output rows planned as coalesced runs, the largest batch sizes, and the stage timing started (index, bytes).
#include <cstddef>
#include <vector>

#include "io/hdf5/load.hpp"
#include "io/hdf5/load_timing.hpp"
#include "io/hdf5/read/chunk_sources.hpp"
#include "io/hdf5/read/read_batches.hpp"

namespace qgpu::io {

struct ReadPlan {
  ChunkSources src;
  std::vector<ReadBatch> batches;
  std::size_t max_buffer = 0, max_chunks = 0, max_out_rows = 0;
  // Dense: frames decode straight into the output when nothing is cropped or binned (direct). Encoded: every batch
  // decodes into staging, is cropped/binned into output frames (or already is them: passthrough) and appended.
  bool encoded = false, direct = false, passthrough = false;
  std::size_t frames_per_out_row = 0;
};

// cuda: staging is sized for the GPU load. Fills timing.index, bytes_read and chunk_bytes.
ReadPlan plan_reads(const LoadPlan& p, bool cuda, LoadTiming& timing);

}  // namespace qgpu::io
