#pragma once
// The read side of a load, shared by the GPU and the fast host load: every frame's chunk located, batches of whole
// output rows planned as coalesced runs, the largest batch sizes, the parallel reader opened, and the stage timing
// started (index, bytes, reader threads). The loaders use its fields as they are; it also names decode failures
// and closes the timing into the provenance the same way for both.
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "core/provenance.hpp"
#include "io/hdf5/codec/bitshuffle_params.hpp"
#include "io/hdf5/load.hpp"
#include "io/hdf5/load_timing.hpp"
#include "io/hdf5/read/chunk_sources.hpp"
#include "io/hdf5/read/parallel_reader.hpp"
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
  std::size_t out_row_bytes = 0;            // bytes of one output scan row
  std::unique_ptr<ParallelReader> reader;   // over src.files, with the load's threads and O_DIRECT choice
  double t_start = 0;                       // when plan_reads began (timing.total counts from here)

  // FormatError "cannot decode <dataset>, frame F (<reason>)" for the chunk at position `chunk` in load order.
  [[noreturn]] void throw_decode_error(const LoadPlan& p, std::size_t chunk, const std::string& reason) const;
  // Closes the timing (total, batches, decoded bytes) and returns the load's provenance with it and the chunk index
  // method.
  Provenance provenance(const LoadPlan& p, LoadTiming& timing, const std::string& backend,
                        const std::string& decoder) const;
};

// The dataset's bitshuffle parameters (its only filter, or one of its filters, is 32008), checked before any chunk
// is decoded, by us or the HDF5 plugin (which divides by the element size: SIGFPE on 0, issue 25): FormatError
// naming the dataset when cd_values are damaged (element size other than 1/2/4/8 or than the dtype's, block size
// not a positive multiple of 8, compression neither LZ4 nor zstd).
codec::BitshuffleParams bitshuffle_params(const FileInfo& fi);
// FormatError when our bitshuffle decoders cannot write the decoded dtype (float64 elements: only HDF5 converts).
void require_decoded_elements(const FileInfo& fi);

// "'<dataset>' in '<file>'", as load errors name the data.
std::string dataset_where(const FileInfo& fi);

// cuda: staging is sized for the GPU load. Fills timing.index, bytes_read, chunk_bytes, read_threads, direct_io.
ReadPlan plan_reads(const LoadPlan& p, bool cuda, LoadTiming& timing);

}  // namespace qgpu::io
