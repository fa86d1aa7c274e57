#include "io/hdf5/read/read_batches.hpp"

#include <algorithm>
#include <string>
#include <thread>

#include "core/error.hpp"
#include "core/thread_pool.hpp"

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

std::vector<ReadBatch> plan_batches_sequential(const ChunkSources& src, std::size_t frames_per_out_row, std::size_t out_rows,
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

namespace {

// What one output row adds to a batch, from its chunks alone (runs of aligned-to-1 reads: a chunk extends the run of
// the chunk before it in the batch when it lies after it in the same file within max_gap, adding the gap and itself,
// else it starts a run, adding itself): as the batch's first row (`first`), after the row before it (`after`), and its
// stored bytes.
struct RowAdds {
  std::uint64_t first = 0, after = 0, stored = 0;
};

std::uint64_t adds(const FrameChunk* prev, const FrameChunk& c, const BatchLimits& lim) {
  if (prev && prev->file == c.file) {
    const std::uint64_t end = prev->offset + prev->size;
    if (c.offset >= end && c.offset - end <= lim.max_gap) return c.offset + c.size - end;
  }
  return c.size;
}

// The batch of rows [row0, row0 + rows) built chunk by chunk (its runs and chunk places).
ReadBatch build(const ChunkSources& src, std::size_t fpr, std::size_t row0, std::size_t rows, const BatchLimits& lim) {
  ReadBatch b;
  b.first_chunk = row0 * fpr;
  b.out_row0 = row0;
  b.out_rows = rows;
  b.chunks = rows * fpr;
  b.chunk_dst.reserve(b.chunks);
  for (std::size_t i = b.first_chunk; i < b.first_chunk + b.chunks; ++i) append(b, src.chunks[i], lim);
  return b;
}

}  // namespace

// The same batches as plan_batches_sequential, planned in three steps: what each row adds (on the process's waiting
// threads), the rows of each batch (one pass over the rows), each batch's runs and chunk places (on the threads
// again). The sample's 262144 chunks took 1.7 ms in one pass before its first read (H100, s21d).
std::vector<ReadBatch> plan_batches(const ChunkSources& src, std::size_t frames_per_out_row, std::size_t out_rows,
                                    const BatchLimits& lim) {
  if (lim.align != 1 || src.chunks.size() < kParallelPlanFrom)
    return plan_batches_sequential(src, frames_per_out_row, out_rows, lim);
  if (src.chunks.size() != frames_per_out_row * out_rows)
    throw InvalidArgument("chunk count does not match the output rows of the load");
  const std::size_t fpr = frames_per_out_row;
  std::vector<RowAdds> row(out_rows);
  const std::size_t block = 16, blocks = (out_rows + block - 1) / block;
  pool_for_first_error(blocks, [&](std::size_t k) {
    for (std::size_t r = k * block; r < std::min(out_rows, (k + 1) * block); ++r) {
      RowAdds& a = row[r];
      const FrameChunk* c = src.chunks.data() + r * fpr;
      std::uint64_t inner = 0;
      for (std::size_t j = 0; j < fpr; ++j) {
        if (j) inner += adds(&c[j - 1], c[j], lim);
        a.stored += c[j].size;
      }
      if (fpr) {
        a.first = c[0].size + inner;
        a.after = adds(r ? &c[-1] : nullptr, c[0], lim) + inner;
      }
    }
  }, std::thread::hardware_concurrency());
  // The rows of each batch, decided as plan_batches_sequential decides them.
  struct Span {
    std::size_t row0 = 0, rows = 0;
    std::uint64_t buffer = 0, stored = 0;
  };
  std::vector<Span> spans;
  std::size_t r = 0;
  double ramp = double(lim.first_max_bytes);
  while (r < out_rows) {
    Span b{r, 0, 0, 0}, whole{r, 0, 0, 0};
    bool full = false;
    const bool ramping = lim.first_max_bytes > 0 && (spans.empty() || lim.growth > 1);
    const std::uint64_t cap = ramping && ramp < double(lim.max_bytes) ? std::uint64_t(ramp) : lim.max_bytes;
    while (r < out_rows) {
      if (b.rows > 0 && lim.max_frames && (b.rows + 1) * fpr > lim.max_frames) {
        full = true;
        break;
      }
      const std::uint64_t buffer = b.buffer + (b.rows ? row[r].after : row[r].first);
      if (b.rows > 0 && buffer > cap) {
        full = true;
        break;
      }
      b.buffer = buffer;
      b.stored += row[r].stored;
      ++b.rows;
      ++r;
      if (lim.row_multiple > 1 && b.rows % lim.row_multiple == 0) whole = b;
    }
    if (full && lim.row_multiple > 1 && b.rows % lim.row_multiple != 0 && whole.rows > 0) {
      r -= b.rows - whole.rows;
      b = whole;
    }
    spans.push_back(b);
    if (lim.growth > 1) ramp *= lim.growth;
  }
  std::vector<ReadBatch> batches(spans.size());
  pool_for_first_error(spans.size(), [&](std::size_t k) {
    batches[k] = build(src, fpr, spans[k].row0, spans[k].rows, lim);
    if (batches[k].buffer_bytes != spans[k].buffer || batches[k].chunk_bytes != spans[k].stored)
      throw Error("read plan: batch " + std::to_string(k) + " holds " + std::to_string(batches[k].buffer_bytes) +
                  " bytes, not the " + std::to_string(spans[k].buffer) + " its rows added up to");
  }, std::thread::hardware_concurrency());
  return batches;
}

}  // namespace qgpu::io
