#include "io/hdf5/read/chunk_sources.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <map>
#include <memory>
#include <thread>

#include "core/checked.hpp"
#include "core/error.hpp"
#include "core/parallel_for.hpp"
#include "core/thread_pool.hpp"
#include "io/hdf5/index/chunk_table.hpp"

namespace qgpu::io {

FrameList load_order(const LoadPlan& p) {
  // Written by rows on every core into huge pages (16.7M entries at 4096x4096: one thread's push_back took tens of
  // ms before the first read).
  FrameList frames;
  const std::size_t cols = p.scan.cols, scan_cols = p.info.shape.scan_cols;
  frames.resize(p.scan.rows * cols);
  advise_huge_pages(frames.data(), frames.size() * sizeof(std::uint64_t));
  const std::size_t rows = p.scan.rows, blocks = (rows + 63) / 64;
  pool_for_first_error(blocks, [&](std::size_t b) {  // on the process's waiting threads (core/thread_pool.hpp)
    for (std::size_t r = b * 64; r < std::min(rows, (b + 1) * 64); ++r) {
      const std::uint64_t first = std::uint64_t(p.scan.row0 + r) * scan_cols + p.scan.col0;
      std::uint64_t* out = frames.data() + r * cols;
      for (std::size_t c = 0; c < cols; ++c) out[c] = first + c;
    }
  }, std::thread::hardware_concurrency());
  return frames;
}

namespace {

constexpr std::size_t kLocateBlock = 16384;  // frames per block (blocks are shared out to the threads in order)
constexpr std::size_t kLocateThreads = 16;

std::uint64_t file_size(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) throw IoError("cannot stat '" + path + "'");
  return std::uint64_t(st.st_size);
}

// Checks that a part's chunk table holds one frame per chunk of the acquisition's frame shape.
void check_one_frame_per_chunk(const FileInfo& fi, const SourcePart& part, const ChunkTable& t) {
  const std::string where = "'" + part.dataset_path + "' in '" + part.file + "'";
  const std::size_t rank = t.dims.size();
  bool one = (rank == 3 || rank == 4) && t.chunk_dims.size() == rank;
  for (std::size_t i = 0; one && i + 2 < rank; ++i) one = t.chunk_dims[i] == 1;
  one = one && t.chunk_dims[rank - 2] == fi.shape.det_rows && t.chunk_dims[rank - 1] == fi.shape.det_cols &&
        t.dims[rank - 2] == fi.shape.det_rows && t.dims[rank - 1] == fi.shape.det_cols;
  if (!one)
    throw FormatError(where + " is not stored one frame per chunk; direct chunk reads need that layout "
                      "(load it with backend='cpu' and decoder='hdf5')");
  std::uint64_t frames = 1;
  for (std::size_t i = 0; i + 2 < rank; ++i) frames *= t.dims[i];
  if (frames < part.frames || t.chunks.size() < part.frames)
    throw FormatError(where + " holds " + std::to_string(frames) + " frames; expected " +
                      std::to_string(part.frames));
}

}  // namespace

namespace {

// Formats without a chunk index: every frame's record from the reader's runs (io/source/frame_records.hpp), each
// checked against its file's size.
ChunkSources locate_records(const LoadPlan& p) {
  const FileInfo& fi = p.info;
  const FrameRecords& rec = fi.records;
  ChunkSources src;
  src.frames = load_order(p);
  src.chunks.resize(src.frames.size());
  src.files = rec.files;
  src.index_method = fi.reader + " records";
  std::vector<std::uint64_t> sizes;
  for (const std::string& f : rec.files) sizes.push_back(file_size(f));
  std::size_t k = 0;
  for (std::size_t i = 0; i < src.frames.size(); ++i) {
    const std::uint64_t f = src.frames[i];
    if (k >= rec.runs.size() || f < rec.runs[k].first_frame) k = 0;
    while (k < rec.runs.size() && f >= rec.runs[k].first_frame + rec.runs[k].frames) ++k;
    if (k >= rec.runs.size())
      throw FormatError("frame " + std::to_string(f) + " of '" + fi.path + "' lies in no record of its files");
    const RecordRun& run = rec.runs[k];
    if (run.file >= sizes.size()) throw FormatError("frame record of '" + fi.path + "' names no file");
    const std::string what = "frame " + std::to_string(f) + " of '" + fi.path + "'";
    const std::uint64_t offset =
        checked_add(run.offset, checked_mul(f - run.first_frame, run.stride, what), what);
    const std::uint64_t fsize = sizes[run.file];
    if (offset > fsize || run.bytes > fsize - offset)
      throw FormatError(what + ": its bytes [" + std::to_string(offset) + ", +" + std::to_string(run.bytes) +
                        ") lie past the end of '" + rec.files[run.file] + "' (" + std::to_string(fsize) +
                        " bytes): truncated file");
    src.chunks[i] = {run.file, offset, run.bytes};
  }
  return src;
}

}  // namespace

ChunkSources locate_chunks(const LoadPlan& p) {
  const FileInfo& fi = p.info;
  if (fi.transposed.present)  // no frame records: every frame is scattered over the file (io/source/load_transposed)
    throw FormatError("'" + fi.path + "' is stored in Fortran order: it has no frame records; load it with io::load");
  if (!fi.records.empty()) return locate_records(p);
  ChunkSources src;
  src.frames = load_order(p);
  src.chunks.resize(src.frames.size());  // (not zero-filled: every entry is written below, into huge pages)
  advise_huge_pages(src.chunks.data(), src.chunks.size() * sizeof(FrameChunk));
  // The parts the load touches, in the order its frames first reach them (which orders src.files): each region
  // row is one run of consecutive frames.
  std::vector<std::shared_ptr<const ChunkTable>> tables(fi.parts.size());
  std::vector<std::uint32_t> file_of(fi.parts.size());
  std::vector<std::uint64_t> sizes;
  std::map<std::string, std::uint32_t> file_ids;
  auto load_table = [&](std::size_t k) {
    if (tables[k]) return;
    tables[k] = k < fi.part_tables.size() && fi.part_tables[k]
                    ? fi.part_tables[k]
                    : std::make_shared<const ChunkTable>(read_chunk_table(fi.parts[k].file, fi.parts[k].dataset_path));
    check_one_frame_per_chunk(fi, fi.parts[k], *tables[k]);
    auto [it, added] = file_ids.emplace(tables[k]->file, std::uint32_t(src.files.size()));
    if (added) {
      src.files.push_back(tables[k]->file);
      sizes.push_back(file_size(tables[k]->file));
    }
    file_of[k] = it->second;
    if (src.index_method.find(tables[k]->method) == std::string::npos)
      src.index_method += (src.index_method.empty() ? "" : "; ") + tables[k]->method;
  };
  const std::size_t cols = p.scan.cols;
  for (std::size_t row = 0; cols && row * cols < src.frames.size(); ++row) {
    const std::uint64_t f0 = src.frames[row * cols], f1 = f0 + cols;  // frames [f0, f1) of this row
    for (std::size_t k = 0; k < fi.parts.size(); ++k) {
      const SourcePart& part = fi.parts[k];
      if (part.first_frame < f1 && f0 < part.first_frame + part.frames) load_table(k);
    }
  }
  // Every frame's chunk, on a few threads (each its own block of frames; the table entries are faulted in there);
  // the error of the first bad frame in load order.
  auto locate = [&](std::size_t i0, std::size_t i1) {
    std::size_t k = 0;
    for (std::size_t i = i0; i < i1; ++i) {
      const std::uint64_t f = src.frames[i];
      if (k >= fi.parts.size() || f < fi.parts[k].first_frame) k = 0;
      while (k < fi.parts.size() && f >= fi.parts[k].first_frame + fi.parts[k].frames) ++k;
      if (k >= fi.parts.size() || !tables[k])
        throw FormatError("frame " + std::to_string(f) + " of '" + fi.path + "' lies in no data part");
      const SourcePart& part = fi.parts[k];
      const ChunkTable& t = *tables[k];
      const ChunkLocation& loc = t.chunks[f - part.first_frame];
      auto where = [&] {
        return "frame " + std::to_string(f) + " of '" + fi.dataset_path + "' in '" + fi.path + "'" +
               (fi.parts.size() > 1 ? " (data file '" + t.file + "')" : "");
      };
      if (loc.size == 0)
        throw FormatError(where() + " has no stored chunk (file incomplete or still being written)");
      if (loc.filter_mask != 0)
        throw FormatError(where() + " was stored without its filter (filter mask " +
                          std::to_string(loc.filter_mask) + "); load it with decoder='hdf5'");
      const std::uint64_t fsize = sizes[file_of[k]];
      if (loc.offset > fsize || loc.size > fsize - loc.offset)
        throw FormatError(where() + ": its chunk [" + std::to_string(loc.offset) + ", +" + std::to_string(loc.size) +
                          ") lies past the end of the file (" + std::to_string(fsize) + " bytes): truncated file");
      src.chunks[i] = {file_of[k], loc.offset, loc.size};
    }
  };
  const std::size_t n = src.frames.size(), blocks = (n + kLocateBlock - 1) / kLocateBlock;
  pool_for_first_error(
      blocks, [&](std::size_t b) { locate(b * kLocateBlock, std::min(n, (b + 1) * kLocateBlock)); }, kLocateThreads);
  return src;
}

}  // namespace qgpu::io
