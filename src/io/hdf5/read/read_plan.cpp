#include "io/hdf5/read/read_plan.hpp"

#include <algorithm>
#include <cstdlib>
#include <numeric>

#include "core/error.hpp"
#include "io/hdf5/bitshuffle_plugin.hpp"
#include "io/hdf5/load_provenance.hpp"
#include "resident/encoded/format.hpp"

namespace qgpu::io {

std::string dataset_where(const FileInfo& fi) {
  return fi.dataset_path.empty() ? "'" + fi.path + "'" : "'" + fi.dataset_path + "' in '" + fi.path + "'";
}

void require_decoded_elements(const FileInfo& fi) {
  if (fi.stored_as)
    throw FormatError(dataset_where(fi) + " holds bitshuffle-compressed " + dtype_name(*fi.stored_as) +
                      " elements, which our decoders do not convert to " + dtype_name(fi.dtype) +
                      ": load it with backend='cpu', decoder='hdf5' (HDF5 converts them)");
}

codec::BitshuffleParams bitshuffle_params(const FileInfo& fi) {
  for (const FilterInfo& f : fi.filters) {
    if (f.id != h5::kBitshuffleFilter) continue;
    codec::BitshuffleParams bp;
    try {
      bp = codec::params_from_cd_values(f.cd_values);
    } catch (const FormatError& e) {
      throw FormatError(dataset_where(fi) + ": " + e.what() + " (damaged filter parameters)");
    }
    if (bp.elem_size != dtype_size(fi.stored_dtype()))
      throw FormatError(dataset_where(fi) + ": bitshuffle element size " + std::to_string(bp.elem_size) +
                        " differs from the dtype's " + std::to_string(dtype_size(fi.stored_dtype())) +
                        " (damaged filter parameters)");
    bp.big_endian = fi.swap_bytes();  // elements stored big-endian: swapped to the host's order after unshuffling
    return bp;
  }
  throw FormatError(dataset_where(fi) + " has no bitshuffle filter (32008)");
}

namespace {

std::uint64_t bytes_from_env(const char* name, std::uint64_t otherwise) {
  if (const char* v = std::getenv(name); v && *v) {
    char* end = nullptr;
    const unsigned long long n = std::strtoull(v, &end, 10);
    if (*end == '\0') return n;
  }
  return otherwise;
}

std::uint64_t first_batch_bytes(std::uint64_t batch_bytes, bool encoded) {
  return bytes_from_env("QGPU_FIRST_BATCH_BYTES", encoded ? batch_bytes / 4 : batch_bytes / 8);
}

double batch_growth(bool encoded) {
  if (const char* v = std::getenv(encoded ? "QGPU_ENCODED_BATCH_GROWTH" : "QGPU_BATCH_GROWTH"); v && *v) {
    char* end = nullptr;
    const double g = std::strtod(v, &end);
    if (*end == '\0' && g >= 0) return g;
  }
  return 2;
}

}  // namespace

ReadPlan plan_reads(const LoadPlan& p, bool cuda, LoadTiming& timing) {
  ReadPlan r;
  r.t_start = now_s();
  r.src = locate_chunks(p);
  timing.index_parse = p.info.index_seconds;  // parsed during inspect
  timing.index_locate = now_s() - r.t_start;  // then located here
  timing.index = timing.index_parse + timing.index_locate;
  r.encoded = p.representation == "encoded";
  r.direct = !r.encoded && p.full_frames() && !p.binned();
  r.passthrough = r.encoded && p.full_frames() && !p.binned();
  r.frames_per_out_row = p.bin_scan * p.scan.cols;
  r.out_row_bytes = p.out_shape.scan_cols * p.out_shape.frame_pixels() * dtype_size(p.out_dtype);
  BatchLimits lim;
  lim.max_bytes = p.batch_bytes;
  lim.max_frames = r.direct ? 0 : staging_frames(p, cuda);
  // A dense GPU load's batches grow from an eighth of the largest, doubling: the GPU decode (the critical path)
  // starts after reading and copying an eighth of the bytes, and each batch is read and copied while the one before
  // decodes (a batch reads ~1.6-2.5x faster than it decodes, but its copy starts only once it is read). With a
  // quarter first batch and full ones after it the decode stood idle 1.6-3.2 ms waiting for batch 1 (H100, s20d,
  // s21a). An encoded load's first batch is a quarter of the largest and its batches double too (since s27b: the
  // last batch, whose encode ends the load after the last decode, is smaller; at 1e5 counts per frame 24.9 against
  // 26.2 ms with full batches after the first, at 2e4 22.2 against 22.4 ms; with the encoder of s21 more calls had
  // cost more than that: 1.3-1.4x the dense load instead of 1.1-1.2x, s21b).
  // QGPU_FIRST_BATCH_BYTES=N sets the first (0: as large as the others), QGPU_BATCH_GROWTH=G the growth (0: full
  // batches straight after the first), QGPU_ENCODED_BATCH_GROWTH=G an encoded load's.
  if (cuda) {
    lim.first_max_bytes = first_batch_bytes(p.batch_bytes, r.encoded);
    lim.growth = batch_growth(r.encoded);
  }
  lim.align = p.direct_io ? ParallelReader::kDirectAlign : 1;
  // An encoded load's batches end on whole encoder tiles where they can (rows x scan columns a multiple of the tile):
  // a batch that ends inside a tile sends every later batch through the encoder's staging tile, unmarked (the
  // decoder's live-group marks count tiles from a batch's first frame), which read every group of 32 pixels.
  if (r.encoded) {
    const std::size_t t = encoded::kDefaultTile;
    lim.row_multiple = t / std::gcd(t, p.out_shape.scan_cols);
  }
  r.batches = plan_batches(r.src, r.frames_per_out_row, p.out_shape.scan_rows, lim);
  for (const ReadBatch& b : r.batches) {
    r.max_buffer = std::max<std::size_t>(r.max_buffer, b.buffer_bytes);
    r.max_chunks = std::max(r.max_chunks, b.chunks);
    r.max_out_rows = std::max(r.max_out_rows, b.out_rows);
    for (const ReadRun& run : b.runs) timing.bytes_read += run.bytes;
    timing.chunk_bytes += b.chunk_bytes;
  }
  r.reader = std::make_unique<ParallelReader>(r.src.files, p.direct_io, p.read_threads);
  timing.read_threads = r.reader->threads();
  timing.direct_io = r.reader->direct();
  return r;
}

void ReadPlan::throw_decode_error(const LoadPlan& p, std::size_t chunk, const std::string& reason) const {
  throw FormatError("cannot decode " + dataset_where(p.info) + ", frame " + std::to_string(src.frames[chunk]) + " (" +
                    reason + ")");
}

Provenance ReadPlan::provenance(const LoadPlan& p, LoadTiming& timing, const std::string& backend,
                                const std::string& decoder) const {
  timing.total = now_s() - t_start;
  timing.batches = batches.size();
  timing.decoded_bytes = std::uint64_t(src.chunks.size()) * p.info.frame_bytes();
  Provenance pv = load_provenance(p, backend, decoder);
  pv.parameters["chunk_index"] = src.index_method;
  pv.parameters["timing"] = timing.to_json();
  return pv;
}

}  // namespace qgpu::io
