#include "io/hdf5/read/read_batches.hpp"

#include <algorithm>

#include "core/error.hpp"

namespace qgpu::io {

namespace {

std::uint64_t align_down(std::uint64_t v, std::uint64_t a) { return v / a * a; }
std::uint64_t align_up(std::uint64_t v, std::uint64_t a) { return (v + a - 1) / a * a; }

// Appends chunk c (stored bytes at c.offset) to the batch's runs: extends the last run when c follows it in the
// same file within max_gap, else starts a new aligned run.
void append(ReadBatch& b, const FrameChunk& c, const BatchLimits& lim) {
  b.chunk_bytes += c.size;
  const std::uint64_t end = c.offset + c.size;
  ReadRun* run = b.runs.empty() ? nullptr : &b.runs.back();
  if (run && run->file == c.file && c.offset >= run->file_offset + run->needed &&
      c.offset - (run->file_offset + run->needed) <= lim.max_gap) {
    run->needed = end - run->file_offset;
    run->bytes = align_up(run->needed, lim.align);
  } else {
    ReadRun r;
    r.file = c.file;
    r.file_offset = align_down(c.offset, lim.align);
    r.needed = end - r.file_offset;
    r.bytes = align_up(r.needed, lim.align);
    r.dst_offset = align_up(b.buffer_bytes, lim.align);
    b.runs.push_back(r);
    run = &b.runs.back();
  }
  b.chunk_dst.push_back(run->dst_offset + (c.offset - run->file_offset));
  b.buffer_bytes = run->dst_offset + run->bytes;
}

}  // namespace

std::vector<ReadBatch> plan_batches(const ChunkSources& src, std::size_t frames_per_out_row, std::size_t out_rows,
                                    const BatchLimits& lim) {
  if (lim.align == 0 || (lim.align & (lim.align - 1))) throw InvalidArgument("read alignment must be a power of two");
  if (src.chunks.size() != frames_per_out_row * out_rows)
    throw InvalidArgument("chunk count does not match the output rows of the load");
  std::vector<ReadBatch> batches;
  std::size_t row = 0;
  double ramp = double(lim.first_max_bytes);  // this batch's cap while the batches grow
  while (row < out_rows) {
    ReadBatch b;
    b.first_chunk = row * frames_per_out_row;
    b.out_row0 = row;
    // room for twice the last batch's chunks and a row (the batches at most double): no regrowth copies as rows
    // are added (a third of the plan's time for the sample's 262144 chunks)
    b.chunk_dst.reserve(std::min<std::size_t>((out_rows - row) * frames_per_out_row,
                                              (batches.empty() ? 4096 : 2 * batches.back().chunks) + frames_per_out_row));
    ReadBatch whole;  // the batch as it was at its last multiple of row_multiple rows (none yet: out_rows 0)
    bool full = false;  // the batch ended because the next row did not fit
    while (row < out_rows) {
      if (b.out_rows > 0 && lim.max_frames && (b.out_rows + 1) * frames_per_out_row > lim.max_frames) {
        full = true;
        break;
      }
      // Remember the state to roll back when this row does not fit.
      const std::size_t n_runs = b.runs.size(), n_chunks = b.chunk_dst.size();
      const ReadRun last = n_runs ? b.runs.back() : ReadRun{};
      const std::uint64_t buffer = b.buffer_bytes, stored = b.chunk_bytes;
      for (std::size_t k = 0; k < frames_per_out_row; ++k) append(b, src.chunks[row * frames_per_out_row + k], lim);
      const bool ramping = lim.first_max_bytes > 0 && (batches.empty() || lim.growth > 1);
      const std::uint64_t cap = ramping && ramp < double(lim.max_bytes) ? std::uint64_t(ramp) : lim.max_bytes;
      if (b.out_rows > 0 && b.buffer_bytes > cap) {
        b.runs.resize(n_runs);
        if (n_runs) b.runs.back() = last;
        b.chunk_dst.resize(n_chunks);
        b.buffer_bytes = buffer;
        b.chunk_bytes = stored;
        full = true;
        break;
      }
      ++b.out_rows;
      ++row;
      if (lim.row_multiple > 1 && b.out_rows % lim.row_multiple == 0) whole = b;
    }
    if (full && lim.row_multiple > 1 && b.out_rows % lim.row_multiple != 0 && whole.out_rows > 0) {
      row -= b.out_rows - whole.out_rows;  // back to the last whole multiple: the next batch starts there
      b = std::move(whole);
    }
    b.chunks = b.out_rows * frames_per_out_row;
    batches.push_back(std::move(b));
    if (lim.growth > 1) ramp *= lim.growth;
  }
  return batches;
}

}  // namespace qgpu::io
