#include "io/hdf5/read/read_plan.hpp"

#include <algorithm>

#include "io/hdf5/read/parallel_reader.hpp"

namespace qgpu::io {

ReadPlan plan_reads(const LoadPlan& p, bool cuda, LoadTiming& timing) {
  ReadPlan r;
  const double t_start = now_s();
  r.src = locate_chunks(p);
  timing.index = p.info.index_seconds + (now_s() - t_start);  // parsed during inspect, then located here
  r.encoded = p.representation == "encoded";
  r.direct = !r.encoded && p.full_frames() && !p.binned();
  r.passthrough = r.encoded && p.full_frames() && !p.binned();
  r.frames_per_out_row = p.bin_scan * p.scan.cols;
  BatchLimits lim;
  lim.max_bytes = p.batch_bytes;
  lim.max_frames = r.direct ? 0 : staging_frames(p, cuda);
  lim.align = p.direct_io ? ParallelReader::kDirectAlign : 1;
  r.batches = plan_batches(r.src, r.frames_per_out_row, p.out_shape.scan_rows, lim);
  for (const ReadBatch& b : r.batches) {
    r.max_buffer = std::max<std::size_t>(r.max_buffer, b.buffer_bytes);
    r.max_chunks = std::max(r.max_chunks, b.chunks);
    r.max_out_rows = std::max(r.max_out_rows, b.out_rows);
    for (const ReadRun& run : b.runs) timing.bytes_read += run.bytes;
    timing.chunk_bytes += b.chunk_bytes;
  }
  return r;
}

}  // namespace qgpu::io
