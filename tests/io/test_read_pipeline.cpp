// The read pipeline of the loaders: chunk locations from the parts' indexes, batches of coalesced runs, parallel
// preads. Every chunk read this way equals the bytes HDF5 returns for it (H5Dread_chunk).
#include <gtest/gtest.h>

#include <hdf5.h>

#include <cstring>
#include <filesystem>

#include "core/error.hpp"
#include "io/hdf5/h5_handle.hpp"
#include "io/hdf5/read/chunk_sources.hpp"
#include "io/hdf5/read/parallel_reader.hpp"
#include "io/hdf5/read/read_batches.hpp"
#include "support/temp_files.hpp"

using namespace qgpu;

namespace {

std::string sample_file(const std::string& name, bool four_d = false, DType t = DType::u16) {
  sample::SampleSpec s;
  s.scan_rows = 9;
  s.scan_cols = 11;
  s.det_rows = s.det_cols = 24;
  s.dtype = t;
  s.four_d = four_d;
  return test::write_small_sample(name, s);
}

io::LoadPlan plan_of(const std::string& path, Region scan = {}) {
  io::LoadOptions o;
  o.scan_region = scan;
  return io::plan_load(path, o);
}

// The stored bytes of a frame's chunk, read through HDF5.
std::vector<std::uint8_t> hdf5_chunk(const io::FileInfo& fi, std::uint64_t frame) {
  h5::Handle f = h5::open_file(fi.path);
  h5::Handle ds = h5::open_dataset(f, fi.dataset_path, fi.path);
  std::vector<hsize_t> c(fi.dims.size(), 0);
  if (fi.dims.size() == 4) {
    c[0] = frame / fi.shape.scan_cols;
    c[1] = frame % fi.shape.scan_cols;
  } else {
    c[0] = frame;
  }
  hsize_t bytes = 0;
  EXPECT_GE(H5Dget_chunk_storage_size(ds, c.data(), &bytes), 0);
  std::vector<std::uint8_t> out(bytes);
  std::uint32_t mask = 0;
  EXPECT_GE(H5Dread_chunk(ds, H5P_DEFAULT, c.data(), &mask, out.data()), 0);
  return out;
}

// Reads every batch and checks each chunk against HDF5; returns the number of runs over all batches.
std::size_t read_and_compare(const io::LoadPlan& p, const io::BatchLimits& lim, unsigned threads, bool direct) {
  const io::ChunkSources src = io::locate_chunks(p);
  const auto batches = io::plan_batches(src, p.scan.cols, p.scan.rows, lim);
  const io::ParallelReader reader(src.files, direct, threads);
  std::size_t runs = 0, covered = 0;
  for (const auto& b : batches) {
    EXPECT_EQ(b.first_chunk, covered);
    EXPECT_EQ(b.chunks, b.out_rows * p.scan.cols);
    covered += b.chunks;
    runs += b.runs.size();
    std::vector<std::uint8_t> storage(b.buffer_bytes + lim.align);
    auto* buf = reinterpret_cast<std::uint8_t*>(
        (reinterpret_cast<std::uintptr_t>(storage.data()) + lim.align - 1) / lim.align * lim.align);
    reader.read(b, buf);
    for (std::size_t i = 0; i < b.chunks; ++i) {
      const std::uint64_t frame = src.frames[b.first_chunk + i];
      const std::vector<std::uint8_t> want = hdf5_chunk(p.info, frame);
      EXPECT_EQ(src.chunks[b.first_chunk + i].size, want.size()) << "frame " << frame;
      if (src.chunks[b.first_chunk + i].size != want.size()) return runs;
      EXPECT_EQ(0, std::memcmp(buf + b.chunk_dst[i], want.data(), want.size())) << "frame " << frame;
    }
  }
  EXPECT_EQ(covered, src.chunks.size());
  return runs;
}

}  // namespace

TEST(ReadPipeline, LoadOrderFollowsTheScanRegion) {
  const io::LoadPlan p = plan_of(sample_file("order.h5"), Region{2, 3, 2, 4});
  const std::vector<std::uint64_t> want = {25, 26, 27, 28, 36, 37, 38, 39};
  const io::FrameList got = io::load_order(p);
  EXPECT_EQ(std::vector<std::uint64_t>(got.begin(), got.end()), want);
}

TEST(ReadPipeline, EveryChunkEqualsHdf5ForEveryLayoutAndRegion) {
  for (bool four_d : {false, true})
    for (DType t : {DType::u8, DType::u32}) {
      const std::string path = sample_file(std::string(four_d ? "4d" : "3d") + dtype_name(t) + ".h5", four_d, t);
      SCOPED_TRACE(path);
      read_and_compare(plan_of(path), {}, 4, false);
      read_and_compare(plan_of(path, Region{1, 2, 5, 7}), {}, 3, false);
    }
}

TEST(ReadPipeline, SequentialChunksCoalesceIntoFewRuns) {
  const io::LoadPlan p = plan_of(sample_file("coalesce.h5"));
  // One batch: the chunks were written one after another, so a handful of runs read all 99 chunks.
  const std::size_t runs = read_and_compare(p, {}, 2, false);
  EXPECT_LE(runs, 4u);
  // No gaps allowed and one row per batch: still correct, more runs.
  io::BatchLimits tight;
  tight.max_bytes = 1;
  tight.max_gap = 0;
  const std::size_t many = read_and_compare(p, tight, 1, false);
  EXPECT_GE(many, 9u);
}

TEST(ReadPipeline, BatchesRespectTheByteAndFrameLimits) {
  const io::LoadPlan p = plan_of(sample_file("limits.h5"));
  const io::ChunkSources src = io::locate_chunks(p);
  io::BatchLimits lim;
  lim.max_frames = 3 * p.scan.cols;
  auto batches = io::plan_batches(src, p.scan.cols, p.scan.rows, lim);
  ASSERT_EQ(batches.size(), 3u);
  for (const auto& b : batches) EXPECT_EQ(b.out_rows, 3u);
  lim = {};
  lim.max_bytes = 1;  // every batch is one row, however small the limit
  batches = io::plan_batches(src, p.scan.cols, p.scan.rows, lim);
  EXPECT_EQ(batches.size(), p.scan.rows);
  EXPECT_THROW(io::plan_batches(src, p.scan.cols + 1, p.scan.rows, {}), InvalidArgument);
  // A smaller first batch (the GPU load's pipeline fill): one row first, then the rest in one batch; every row once.
  lim = {};
  lim.first_max_bytes = 1;
  batches = io::plan_batches(src, p.scan.cols, p.scan.rows, lim);
  ASSERT_EQ(batches.size(), 2u);
  EXPECT_EQ(batches[0].out_rows, 1u);
  EXPECT_EQ(batches[1].out_row0, 1u);
  EXPECT_EQ(batches[1].out_rows, p.scan.rows - 1);
  EXPECT_EQ(batches[1].first_chunk, p.scan.cols);
}

// Growing batches (the GPU load's ramp): batch i holds at most first x growth^i bytes unless it is one row, and the
// rows of all batches are every row once, in order. A scan of 48 rows, so that the growth shows whatever holes HDF5
// leaves between the chunks (its metadata blocks land among them at places that vary from one write to the next:
// a hole of a few KiB inside the first batch once made it hold more rows than the third of a 9-row scan).
TEST(ReadPipeline, BatchesGrowFromTheFirstOne) {
  sample::SampleSpec s;
  s.scan_rows = 48;
  s.scan_cols = 11;
  s.det_rows = s.det_cols = 24;
  const io::LoadPlan p = plan_of(test::write_small_sample("growth.h5", s));
  const io::ChunkSources src = io::locate_chunks(p);
  std::uint64_t row_max = 0;
  io::BatchLimits lim;
  lim.max_bytes = 1;
  for (const auto& b : io::plan_batches(src, p.scan.cols, p.scan.rows, lim)) row_max = std::max(row_max, b.buffer_bytes);
  lim = {};
  lim.first_max_bytes = row_max;
  lim.growth = 2;
  const auto batches = io::plan_batches(src, p.scan.cols, p.scan.rows, lim);
  ASSERT_GE(batches.size(), 4u);
  std::size_t row = 0;
  double cap = double(row_max);
  for (std::size_t k = 0; k < batches.size(); ++k) {
    EXPECT_EQ(batches[k].out_row0, row);
    EXPECT_EQ(batches[k].first_chunk, row * p.scan.cols);
    if (batches[k].out_rows > 1) EXPECT_LE(double(batches[k].buffer_bytes), cap) << "batch " << k;
    row += batches[k].out_rows;
    cap *= 2;
  }
  EXPECT_EQ(row, p.scan.rows);
  // Batch 3 may hold 8x the first one's bytes: more rows, though a hole of HDF5 metadata falls in it.
  EXPECT_GT(batches[3].out_rows, batches[0].out_rows + 2);
  EXPECT_LT(batches.size(), p.scan.rows / 4);  // not one row each: they grew
}

// Batches of an encoded load end on whole encoder tiles (row_multiple): a batch that would end after 5 rows ends
// after 4 with a multiple of 2 (or 3 with a multiple of 3), the next starts at the row after it, the rows and
// chunks of all batches are every row once, in order, and each batch's chunk places and bytes are those of its own
// rows (as planned without the multiple); the last batch and a first batch too small for one multiple stay as
// they are.
TEST(ReadPipeline, BatchesEndOnRowMultiples) {
  const io::LoadPlan p = plan_of(sample_file("multiples.h5"));
  const io::ChunkSources src = io::locate_chunks(p);
  ASSERT_EQ(p.scan.rows, 9u);  // batches of 4, 4, 1 rows (multiple 2) and 3, 3, 3 (multiple 3)
  for (std::size_t m : {2u, 3u}) {
    io::BatchLimits lim;
    lim.max_frames = 5 * p.scan.cols;
    lim.row_multiple = m;
    const auto batches = io::plan_batches(src, p.scan.cols, p.scan.rows, lim);
    std::size_t row = 0;
    for (std::size_t k = 0; k < batches.size(); ++k) {
      const io::ReadBatch& b = batches[k];
      EXPECT_EQ(b.out_row0, row);
      EXPECT_EQ(b.first_chunk, row * p.scan.cols);
      EXPECT_EQ(b.chunks, b.out_rows * p.scan.cols);
      EXPECT_EQ(b.chunk_dst.size(), b.chunks);
      if (k + 1 < batches.size()) EXPECT_EQ(b.out_rows, 5 / m * m) << "multiple " << m << " batch " << k;
      // the same rows planned alone: the same runs, places and bytes
      io::BatchLimits one;
      one.max_frames = b.out_rows * p.scan.cols;
      io::ChunkSources part = src;
      part.chunks.assign(src.chunks.begin() + b.first_chunk, src.chunks.begin() + b.first_chunk + b.chunks);
      const auto alone = io::plan_batches(part, p.scan.cols, b.out_rows, one);
      ASSERT_EQ(alone.size(), 1u);
      EXPECT_EQ(alone[0].chunk_dst, b.chunk_dst);
      EXPECT_EQ(alone[0].buffer_bytes, b.buffer_bytes);
      EXPECT_EQ(alone[0].chunk_bytes, b.chunk_bytes);
      EXPECT_EQ(alone[0].runs.size(), b.runs.size());
      row += b.out_rows;
    }
    EXPECT_EQ(row, p.scan.rows);
  }
  io::BatchLimits lim;  // the first batch of one row (first_max_bytes): smaller than one multiple, kept
  lim.first_max_bytes = 1;
  lim.max_frames = 4 * p.scan.cols;
  lim.row_multiple = 4;
  const auto batches = io::plan_batches(src, p.scan.cols, p.scan.rows, lim);
  EXPECT_EQ(batches[0].out_rows, 1u);
  EXPECT_EQ(batches[1].out_rows, 4u);
}

// The stepped read (the GPU load copies each range while the rest is read): ranges in order covering the batch,
// each at least the step but the last, every byte of a range already read when it is given (equal to the file's),
// on many threads; an exception from the callback comes out of the read.
TEST(ReadPipeline, SteppedReadGivesEachRangeOnceItIsRead) {
  const std::string path = test::temp_path("stepped.bin");
  const std::size_t chunks = 100, chunk = 100000;
  std::vector<std::uint8_t> bytes(chunks * chunk + 4096);
  std::uint64_t state = 99;
  for (auto& b : bytes) b = std::uint8_t((state = state * 6364136223846793005ull + 1442695040888963407ull) >> 56);
  {
    std::FILE* f = std::fopen(path.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    ASSERT_EQ(std::fwrite(bytes.data(), 1, bytes.size(), f), bytes.size());
    std::fclose(f);
  }
  io::ChunkSources src;
  src.files = {path};
  for (std::size_t i = 0; i < chunks; ++i) src.chunks.push_back({0, 4096 + i * chunk, std::uint32_t(chunk)});
  io::BatchLimits lim;
  lim.max_bytes = std::uint64_t(1) << 30;
  const auto batches = io::plan_batches(src, 10, 10, lim);
  ASSERT_EQ(batches.size(), 1u);
  const io::ReadBatch& b = batches[0];
  ASSERT_EQ(b.buffer_bytes, chunks * chunk);
  for (unsigned threads : {1u, 8u}) {
    const io::ParallelReader reader({path}, false, threads);
    std::vector<std::uint8_t> dst(b.buffer_bytes, 0);
    std::vector<std::pair<std::uint64_t, std::uint64_t>> ranges;
    const std::uint64_t step = 3u << 20;
    reader.read(b, dst.data(), step, [&](std::uint64_t from, std::uint64_t to) {
      ranges.emplace_back(from, to);
      EXPECT_EQ(0, std::memcmp(dst.data() + from, bytes.data() + 4096 + from, to - from)) << from << ".." << to;
    });
    // One thread reads in order, so each step is given as it completes; on 8 a slow early piece may hold back the
    // ranges behind it, which then come as one (how many is the scheduler's: at least one).
    ASSERT_GE(ranges.size(), threads == 1 ? 3u : 1u) << threads;
    std::uint64_t at = 0;
    for (std::size_t k = 0; k < ranges.size(); ++k) {
      EXPECT_EQ(ranges[k].first, at) << k;
      EXPECT_GT(ranges[k].second, ranges[k].first) << k;
      if (k + 1 < ranges.size()) EXPECT_GE(ranges[k].second - ranges[k].first, step) << k;
      at = ranges[k].second;
    }
    EXPECT_EQ(at, b.buffer_bytes);
    EXPECT_EQ(0, std::memcmp(dst.data(), bytes.data() + 4096, dst.size()));
    EXPECT_THROW(reader.read(b, dst.data(), step, [](std::uint64_t, std::uint64_t) { throw IoError("no room"); }),
                 IoError);
  }
}

TEST(ReadPipeline, AlignedRunsForDirectReads) {
  const io::LoadPlan p = plan_of(sample_file("aligned.h5"));
  io::BatchLimits lim;
  lim.align = io::ParallelReader::kDirectAlign;
  lim.max_bytes = 8192;
  const io::ChunkSources src = io::locate_chunks(p);
  for (const auto& b : io::plan_batches(src, p.scan.cols, p.scan.rows, lim))
    for (const auto& r : b.runs) {
      EXPECT_EQ(r.file_offset % lim.align, 0u);
      EXPECT_EQ(r.bytes % lim.align, 0u);
      EXPECT_EQ(r.dst_offset % lim.align, 0u);
      EXPECT_GE(r.bytes, r.needed);
    }
  read_and_compare(p, lim, 4, false);  // aligned runs through buffered reads
  try {
    read_and_compare(p, lim, 4, true);  // O_DIRECT where the file system supports it
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("direct"), std::string::npos) << e.what();
  }
}

TEST(ReadPipeline, TruncatedFileIsNamedWithSizes) {
  const std::string path = sample_file("truncated.h5");
  const io::LoadPlan p = plan_of(path);
  const io::ChunkSources src = io::locate_chunks(p);
  // Cut the file in the middle of the last chunk's bytes (the index stays readable: it was read already).
  std::uint64_t last_end = 0;
  for (const auto& c : src.chunks) last_end = std::max(last_end, c.offset + c.size);
  std::filesystem::resize_file(path, last_end - 5);
  io::BatchLimits lim;
  const auto batches = io::plan_batches(src, p.scan.cols, p.scan.rows, lim);
  const io::ParallelReader reader(src.files, false, 2);
  std::vector<std::uint8_t> buf(batches.back().buffer_bytes);
  try {
    for (const auto& b : batches) reader.read(b, buf.data());
    FAIL() << "expected FormatError";
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("truncated file"), std::string::npos) << e.what();
  }
}

TEST(ReadPipeline, MissingFileIsNamed) {
  EXPECT_THROW(io::ParallelReader({"/nonexistent/qgpu.h5"}, false, 1), IoError);
}

// Loads of more than one block of frames are located on several threads (issue 33): every frame's chunk is its
// table entry, HDF5's stored size, and the first frame without a chunk in load order is named.
TEST(ReadPipeline, LocateOnThreadsMatchesTheTable) {
  sample::SampleSpec s;
  s.scan_rows = 200;
  s.scan_cols = 200;  // 40000 frames: three blocks of 16384
  s.det_rows = s.det_cols = 8;
  const std::string path = test::write_small_sample("locate_threads.h5", s);
  for (const Region& r : {Region{}, Region{7, 3, 180, 190}}) {
    const io::LoadPlan p = plan_of(path, r);
    const io::ChunkSources src = io::locate_chunks(p);
    ASSERT_EQ(src.chunks.size(), p.scan.rows * p.scan.cols);
    ASSERT_EQ(src.files.size(), 1u);
    const io::ChunkTable& t = *p.info.part_tables.at(0);
    h5::Handle f = h5::open_file(path);
    h5::Handle ds = h5::open_dataset(f, p.info.dataset_path, path);
    for (std::size_t i = 0; i < src.chunks.size(); ++i) {
      const std::uint64_t frame = (p.scan.row0 + i / p.scan.cols) * 200 + p.scan.col0 + i % p.scan.cols;
      ASSERT_EQ(src.frames[i], frame);
      ASSERT_EQ(src.chunks[i].file, 0u);
      ASSERT_EQ(src.chunks[i].offset, t.chunks[frame].offset) << "frame " << frame;
      hsize_t c[3] = {frame, 0, 0}, bytes = 0;
      ASSERT_GE(H5Dget_chunk_storage_size(ds, c, &bytes), 0);
      ASSERT_EQ(src.chunks[i].size, bytes) << "frame " << frame;
    }
  }
  // Frames 35000 and 20000 without a chunk (in the third and second blocks): frame 20000 is named.
  io::LoadPlan p = plan_of(path);
  auto t = std::make_shared<io::ChunkTable>(*p.info.part_tables.at(0));
  t->chunks[35000].size = 0;
  t->chunks[20000].size = 0;
  p.info.part_tables[0] = t;
  for (int run = 0; run < 5; ++run) {
    try {
      io::locate_chunks(p);
      FAIL() << "located a frame without a chunk";
    } catch (const FormatError& e) {
      EXPECT_NE(std::string(e.what()).find("frame 20000 of"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("has no stored chunk"), std::string::npos) << e.what();
    }
  }
}

// The parallel batch plan (from kParallelPlanFrom chunks) gives the sequential plan's batches exactly: rows, runs,
// chunk places and bytes, for chunks in order, with gaps beyond max_gap, out of order, across files, and for every
// kind of limit (bytes, first batch and growth, frames, whole encoder tiles).
TEST(ReadPipeline, ParallelBatchPlanEqualsTheSequentialOne) {
  std::uint64_t state = 12345;
  const auto next = [&] { return state = state * 6364136223846793005ull + 1442695040888963407ull; };
  for (int layout = 0; layout < 4; ++layout) {
    const std::size_t cols = 97, rows = 211;  // 20467 chunks
    io::ChunkSources src;
    src.files = {"a", "b"};
    src.chunks.resize(cols * rows);
    std::uint64_t at[2] = {0, 0};
    for (std::size_t i = 0; i < src.chunks.size(); ++i) {
      const std::uint64_t r = next() >> 33;
      const std::uint32_t file = layout == 3 ? std::uint32_t(r % 7 == 0) : 0;  // 3: some chunks in another file
      const std::uint64_t size = 100 + r % 3000;
      std::uint64_t gap = 0;
      if (layout >= 1) gap = r % 5 == 0 ? (r % 200000) : r % 64;  // 1..3: gaps, some beyond max_gap (64 KiB)
      std::uint64_t offset = at[file] + gap;
      if (layout == 2 && r % 11 == 0 && at[file] > 5000) offset = at[file] - 5000;  // 2: some earlier in the file
      src.chunks[i] = {file, offset, size};
      at[file] = std::max(at[file], offset + size);
    }
    for (int limits = 0; limits < 5; ++limits) {
      io::BatchLimits lim;
      lim.max_bytes = 3 << 20;
      if (limits == 1) {
        lim.first_max_bytes = 1 << 18;
        lim.growth = 2;
      }
      if (limits == 2) lim.first_max_bytes = 1 << 19;  // a quarter first batch, full ones after it
      if (limits == 3) lim.max_frames = 13 * cols;
      if (limits == 4) {
        lim.row_multiple = 4;
        lim.max_frames = 10 * cols;
        lim.first_max_bytes = 1 << 18;
      }
      SCOPED_TRACE("layout " + std::to_string(layout) + " limits " + std::to_string(limits));
      const auto par = io::plan_batches(src, cols, rows, lim), seq = io::plan_batches_sequential(src, cols, rows, lim);
      ASSERT_EQ(par.size(), seq.size());
      ASSERT_GT(par.size(), 2u);
      for (std::size_t k = 0; k < par.size(); ++k) {
        EXPECT_EQ(par[k].first_chunk, seq[k].first_chunk) << k;
        EXPECT_EQ(par[k].chunks, seq[k].chunks) << k;
        EXPECT_EQ(par[k].out_row0, seq[k].out_row0) << k;
        EXPECT_EQ(par[k].out_rows, seq[k].out_rows) << k;
        EXPECT_EQ(par[k].buffer_bytes, seq[k].buffer_bytes) << k;
        EXPECT_EQ(par[k].chunk_bytes, seq[k].chunk_bytes) << k;
        EXPECT_EQ(par[k].chunk_dst, seq[k].chunk_dst) << k;
        ASSERT_EQ(par[k].runs.size(), seq[k].runs.size()) << k;
        for (std::size_t j = 0; j < par[k].runs.size(); ++j) {
          EXPECT_EQ(par[k].runs[j].file, seq[k].runs[j].file);
          EXPECT_EQ(par[k].runs[j].file_offset, seq[k].runs[j].file_offset);
          EXPECT_EQ(par[k].runs[j].bytes, seq[k].runs[j].bytes);
          EXPECT_EQ(par[k].runs[j].needed, seq[k].runs[j].needed);
          EXPECT_EQ(par[k].runs[j].dst_offset, seq[k].runs[j].dst_offset);
        }
      }
    }
  }
}
