// inspect_hdf5 takes the FileInfo its child process parsed (io/hdf5/isolated_parse.hpp, io/hdf5/file_info_wire.hpp):
// it equals inspect_in_process field by field (chunk tables chunk by chunk) on every layout the HDF5 reader knows;
// a short or malformed report is an Error; a second inspect of an unchanged file starts no child, a changed one does;
// damaged files stay FormatErrors, and the heap-dependent HDF5 use-after-free never reaches this process.
#include <gtest/gtest.h>
#include <hdf5.h>
#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "chunk_files.hpp"
#include "io/hdf5/file_info.hpp"
#include "io/hdf5/file_info_wire.hpp"
#include "io/hdf5/h5_handle.hpp"
#include "io/hdf5/instrument_metadata.hpp"
#include "io/hdf5/isolated_parse.hpp"
#include "io/sample/sample.hpp"
#include "support/expect_error.hpp"
#include "support/temp_files.hpp"

using namespace qgpu;
using qgpu::test::expect_error;
namespace fs = std::filesystem;

namespace {

struct InspectChild : ::testing::Test {
  void SetUp() override {
    io::testing::reset_parse_isolation();
    io::testing::forget_inspected_files();
  }
  void TearDown() override {
    io::testing::reset_parse_isolation();
    io::testing::forget_inspected_files();
    ::unsetenv("QGPU_PARSE_ISOLATION");
  }
};

// Every field of two FileInfos; index_seconds exactly only when both come from one parse (timed twice otherwise).
void expect_same(const io::FileInfo& a, const io::FileInfo& b, bool same_parse) {
  EXPECT_EQ(a.to_json().dump(), b.to_json().dump());
  EXPECT_EQ(a.path, b.path);
  EXPECT_EQ(a.reader, b.reader);
  EXPECT_EQ(a.codec.kind, b.codec.kind);
  EXPECT_EQ(a.records.files, b.records.files);
  ASSERT_EQ(a.records.runs.size(), b.records.runs.size());
  for (std::size_t i = 0; i < a.records.runs.size(); ++i) {
    const io::RecordRun &x = a.records.runs[i], &y = b.records.runs[i];
    EXPECT_EQ(x.file, y.file);
    EXPECT_EQ(x.first_frame, y.first_frame);
    EXPECT_EQ(x.frames, y.frames);
    EXPECT_EQ(x.offset, y.offset);
    EXPECT_EQ(x.stride, y.stride);
    EXPECT_EQ(x.bytes, y.bytes);
  }
  EXPECT_EQ(a.sparse.kind, b.sparse.kind);
  EXPECT_EQ(a.sparse.frames_dataset, b.sparse.frames_dataset);
  EXPECT_EQ(a.sparse.positions_dataset, b.sparse.positions_dataset);
  EXPECT_EQ(a.sparse.version, b.sparse.version);
  EXPECT_EQ(a.sparse.stored_frames, b.sparse.stored_frames);
  EXPECT_EQ(a.sparse.frames_per_position, b.sparse.frames_per_position);
  EXPECT_EQ(a.sparse.positions, b.sparse.positions);
  EXPECT_EQ(a.sparse.rows, b.sparse.rows);
  EXPECT_EQ(a.sparse.nnz, b.sparse.nnz);
  EXPECT_EQ(a.transposed.present, b.transposed.present);
  EXPECT_EQ(a.transposed.offset, b.transposed.offset);
  EXPECT_EQ(a.warnings, b.warnings);
  EXPECT_EQ(a.metadata, b.metadata);
  EXPECT_EQ(a.dataset_path, b.dataset_path);
  EXPECT_EQ(a.source_kind, b.source_kind);
  EXPECT_EQ(a.dtype, b.dtype);
  EXPECT_EQ(a.stored_as, b.stored_as);
  EXPECT_EQ(a.byte_order, b.byte_order);
  EXPECT_EQ(a.precision, b.precision);
  EXPECT_EQ(a.bit_offset, b.bit_offset);
  EXPECT_EQ(a.dims, b.dims);
  EXPECT_EQ(a.chunk_dims, b.chunk_dims);
  ASSERT_EQ(a.filters.size(), b.filters.size());
  for (std::size_t i = 0; i < a.filters.size(); ++i) {
    EXPECT_EQ(a.filters[i].id, b.filters[i].id);
    EXPECT_EQ(a.filters[i].name, b.filters[i].name);
    EXPECT_EQ(a.filters[i].cd_values, b.filters[i].cd_values);
  }
  EXPECT_EQ(a.shape, b.shape);
  EXPECT_EQ(a.scan_shape_source, b.scan_shape_source);
  EXPECT_EQ(a.frames, b.frames);
  EXPECT_EQ(a.scan_shape_known, b.scan_shape_known);
  EXPECT_EQ(a.scan_shape_needed, b.scan_shape_needed);
  EXPECT_EQ(a.ntrigger, b.ntrigger);
  EXPECT_EQ(a.nimages, b.nimages);
  EXPECT_EQ(a.has_pixel_mask, b.has_pixel_mask);
  EXPECT_EQ(a.bad_pixels, b.bad_pixels);
  EXPECT_EQ(a.one_frame_per_chunk, b.one_frame_per_chunk);
  EXPECT_EQ(a.bitshuffle_lz4, b.bitshuffle_lz4);
  EXPECT_EQ(a.bitshuffle_block_elems, b.bitshuffle_block_elems);
  EXPECT_EQ(a.chunks_expected, b.chunks_expected);
  EXPECT_EQ(a.chunks_written, b.chunks_written);
  EXPECT_EQ(a.ready, b.ready);
  EXPECT_EQ(a.index_error, b.index_error);
  EXPECT_EQ(a.calibration, b.calibration);
  EXPECT_EQ(a.calibration_detail, b.calibration_detail);
  EXPECT_EQ(a.metadata_warnings, b.metadata_warnings);
  EXPECT_EQ(a.sidecar, b.sidecar);
  ASSERT_EQ(a.parts.size(), b.parts.size());
  for (std::size_t i = 0; i < a.parts.size(); ++i) {
    EXPECT_EQ(a.parts[i].file, b.parts[i].file);
    EXPECT_EQ(a.parts[i].dataset_path, b.parts[i].dataset_path);
    EXPECT_EQ(a.parts[i].first_frame, b.parts[i].first_frame);
    EXPECT_EQ(a.parts[i].frames, b.parts[i].frames);
  }
  ASSERT_EQ(a.part_tables.size(), b.part_tables.size());
  for (std::size_t i = 0; i < a.part_tables.size(); ++i) {
    SCOPED_TRACE("part table " + std::to_string(i));
    ASSERT_EQ(bool(a.part_tables[i]), bool(b.part_tables[i]));
    if (!a.part_tables[i]) continue;
    const io::ChunkTable &x = *a.part_tables[i], &y = *b.part_tables[i];
    EXPECT_EQ(x.file, y.file);
    EXPECT_EQ(x.dataset_path, y.dataset_path);
    EXPECT_EQ(x.dims, y.dims);
    EXPECT_EQ(x.chunk_dims, y.chunk_dims);
    EXPECT_EQ(x.method, y.method);
    ASSERT_EQ(x.chunks.size(), y.chunks.size());
    for (std::size_t c = 0; c < x.chunks.size(); ++c) {
      EXPECT_EQ(x.chunks[c].offset, y.chunks[c].offset) << "chunk " << c;
      EXPECT_EQ(x.chunks[c].size, y.chunks[c].size) << "chunk " << c;
      EXPECT_EQ(x.chunks[c].filter_mask, y.chunks[c].filter_mask) << "chunk " << c;
    }
  }
  if (same_parse) {
    EXPECT_EQ(a.index_seconds, b.index_seconds);
  } else {
    EXPECT_TRUE(std::isfinite(a.index_seconds) && a.index_seconds >= 0) << a.index_seconds;
    EXPECT_TRUE(std::isfinite(b.index_seconds) && b.index_seconds >= 0) << b.index_seconds;
  }
}

// inspect through the child (one child started) equals inspect in this process, and the encoding round-trips
// exactly. Returns the child's FileInfo.
io::FileInfo expect_child_equals_in_process(const std::string& path, const std::string& dataset = "",
                                            std::size_t rows = 0, std::size_t cols = 0,
                                            io::ScanShapeNeed need = io::ScanShapeNeed::required) {
  SCOPED_TRACE(path);
  const std::size_t before = io::testing::children_started();
  const io::FileInfo child = io::inspect_hdf5(path, dataset, rows, cols, need);
  EXPECT_EQ(io::testing::children_started(), before + 1);
  const io::FileInfo here = io::inspect_in_process(path, dataset, rows, cols, need);
  expect_same(child, here, false);
  expect_same(io::decode_file_info(io::encode_file_info(here), path), here, true);
  return child;
}

std::size_t children() { return io::testing::children_started(); }

// A contiguous (frames, det_r, det_c) dataset /data of HDF5 type `type`, 16 frames of 6 x 5 (element values unused).
std::string contiguous_file(const std::string& name, hid_t type) {
  const std::string path = test::temp_path(name);
  h5::Handle f(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT), H5Fclose);
  const hsize_t dims[3] = {16, 6, 5};
  h5::Handle sp(H5Screate_simple(3, dims, nullptr), H5Sclose);
  h5::Handle d(H5Dcreate2(f, "/data", type, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Dclose);
  std::vector<double> v(16 * 6 * 5);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = double(i % 97) - 20;
  EXPECT_GE(H5Dwrite(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data()), 0);
  return path;
}

sample::SampleSpec small_spec() {
  sample::SampleSpec s;
  s.scan_rows = 6;
  s.scan_cols = 8;
  s.det_rows = s.det_cols = 16;
  s.seed = 3;
  return s;
}

}  // namespace

TEST_F(InspectChild, SampleFileEqualsInProcess) {
  const std::string path = test::temp_path("child_sample.h5");
  sample::write_sample(path, small_spec());
  const io::FileInfo fi = expect_child_equals_in_process(path);
  EXPECT_EQ(fi.shape, (Shape4D{6, 8, 16, 16}));
  EXPECT_TRUE(fi.bitshuffle_lz4);
  EXPECT_TRUE(fi.ready);
  ASSERT_EQ(fi.part_tables.size(), 1u);
  ASSERT_TRUE(fi.part_tables[0]);
  EXPECT_EQ(fi.part_tables[0]->chunks.size(), 48u);
  EXPECT_NE(fi.part_tables[0]->method.find("parsed"), std::string::npos) << fi.part_tables[0]->method;
  // The chunk table the child sent, against the HDF5 library chunk by chunk.
  test::expect_matches_hdf5(path, fi.dataset_path, *fi.part_tables[0], true);
  // The optional scan shape of a request that does not give one, and a given one.
  expect_child_equals_in_process(path, "", 8, 6);
}

TEST_F(InspectChild, FixedAndExtensibleArrayIndexesEqualInProcess) {
  test::ChunkedSpec fixed;
  fixed.dims = {16, 8, 8};
  fixed.chunk = {1, 8, 8};
  fixed.low = H5F_LIBVER_LATEST;
  test::ChunkedSpec extensible = fixed;
  extensible.max_dims = {H5S_UNLIMITED, 8, 8};
  test::ChunkedSpec btree2 = fixed;
  btree2.max_dims = {H5S_UNLIMITED, H5S_UNLIMITED, 8};
  btree2.chunk = {2, 4, 8};
  int k = 0;
  for (const auto& [spec, index] : {std::pair{fixed, "fixed array"}, {extensible, "extensible array"},
                                    {btree2, "version 2 B-tree"}}) {
    SCOPED_TRACE(index);
    const std::string path = test::temp_path("child_index_" + std::to_string(k++) + ".h5");
    test::write_chunked(path, spec);
    const io::FileInfo fi = expect_child_equals_in_process(path);
    ASSERT_EQ(fi.part_tables.size(), 1u);
    ASSERT_TRUE(fi.part_tables[0]);
    EXPECT_NE(fi.part_tables[0]->method.find(index), std::string::npos) << fi.part_tables[0]->method;
    test::expect_matches_hdf5(path, "/data", *fi.part_tables[0], true);
    EXPECT_EQ(fi.shape, (Shape4D{4, 4, 8, 8}));
  }
}

TEST_F(InspectChild, MultiFileMasterWithPixelMaskEqualsInProcess) {
  const fs::path dir = test::temp_path("child_multi");
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string master = (dir / "acq_master.h5").string();
  const sample::SampleSpec s = small_spec();
  const std::vector<std::string> data = sample::write_sample_acquisition(master, s, 3);
  const io::FileInfo fi = expect_child_equals_in_process(master);
  ASSERT_EQ(fi.parts.size(), 3u);
  ASSERT_EQ(fi.part_tables.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) {
    ASSERT_TRUE(fi.part_tables[i]);
    EXPECT_EQ(fs::canonical(fi.part_tables[i]->file), fs::canonical(data[i]));
    test::expect_matches_hdf5(fi.part_tables[i]->file, fi.part_tables[i]->dataset_path, *fi.part_tables[i], true);
  }
  EXPECT_EQ(fi.frames, 48u);
  EXPECT_TRUE(fi.has_pixel_mask);
  EXPECT_EQ(fi.bad_pixels, sample::sample_bad_pixels(s));
  EXPECT_EQ(fi.ntrigger, 6);
  EXPECT_EQ(fi.nimages, 8);

  // Cached: no child; a touched data file (the master unchanged) is parsed again.
  const std::size_t n = children();
  const io::FileInfo cached = io::inspect_hdf5(master);
  expect_same(cached, fi, false);
  EXPECT_EQ(cached.index_seconds, 0.0);  // nothing parsed
  EXPECT_EQ(children(), n);
  fs::last_write_time(data[1], fs::last_write_time(data[1]) + std::chrono::seconds(5));
  expect_same(io::inspect_hdf5(master), fi, false);
  EXPECT_EQ(children(), n + 1);
}

TEST_F(InspectChild, ArinaSidecarEqualsInProcessAndItsArrivalIsSeen) {
  const fs::path dir = test::temp_path("child_arina");
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string master = (dir / "arina_master.h5").string();
  sample::SampleSpec s = small_spec();
  sample::write_sample_acquisition(master, s, 2);
  {  // ARINA: the scan shape only in the sidecar
    h5::Handle f(H5Fopen(master.c_str(), H5F_ACC_RDWR, H5P_DEFAULT), H5Fclose);
    EXPECT_GE(H5Ldelete(f, "/entry/calibration", H5P_DEFAULT), 0);
    for (const char* n : {"ntrigger", "nimages"}) {
      const std::string p = std::string("/entry/instrument/detector/detectorSpecific/") + n;
      h5::Handle d(H5Dopen2(f, p.c_str(), H5P_DEFAULT), H5Dclose);
      const long long v = std::string(n) == "ntrigger" ? 48 : 1;
      EXPECT_GE(H5Dwrite(d, H5T_NATIVE_LLONG, H5S_ALL, H5S_ALL, H5P_DEFAULT, &v), 0);
    }
  }
  // Without the sidecar: the scan shape is not known (48 frames is no square).
  const io::FileInfo bare = expect_child_equals_in_process(master, "", 0, 0, io::ScanShapeNeed::optional);
  EXPECT_FALSE(bare.scan_shape_known);
  EXPECT_EQ(bare.sidecar, "");
  const std::size_t n = children();
  io::inspect_hdf5(master, "", 0, 0, io::ScanShapeNeed::optional);
  EXPECT_EQ(children(), n);
  // A load's request (the scan shape required) raises from the kept result what the parse raises, without a child.
  std::string parsed_error;
  try {
    io::inspect_in_process(master);
  } catch (const FormatError& e) {
    parsed_error = e.what();
  }
  ASSERT_NE(parsed_error.find("give scan_shape"), std::string::npos) << parsed_error;
  expect_error<FormatError>([&] { io::inspect_hdf5(master); }, {parsed_error});
  EXPECT_EQ(children(), n);

  const std::string side = io::arina_sidecar_path(master);
  {
    h5::Handle f(H5Fcreate(side.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT), H5Fclose);
    h5::Handle g(H5Gcreate2(f, io::kStemMetadataGroup, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Gclose);
    h5::Handle sp(H5Screate(H5S_SCALAR), H5Sclose);
    for (const auto& [name, v] : {std::pair{"NumPixelsY", 6LL}, {"NumPixelsX", 8LL}}) {
      h5::Handle a(H5Acreate2(g, name, H5T_STD_I64LE, sp, H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
      ASSERT_GE(H5Awrite(a, H5T_NATIVE_LLONG, &v), 0);
    }
    const hsize_t one = 1;
    h5::Handle sp1(H5Screate_simple(1, &one, nullptr), H5Sclose);
    h5::Handle a(H5Acreate2(g, "High Tension", H5T_IEEE_F64LE, sp1, H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
    const double ht = 300000;
    ASSERT_GE(H5Awrite(a, H5T_NATIVE_DOUBLE, &ht), 0);
  }
  // The sidecar appeared: the kept result is stale, the child runs again and finds it.
  const io::FileInfo fi = io::inspect_hdf5(master, "", 0, 0, io::ScanShapeNeed::optional);
  EXPECT_EQ(children(), n + 1);
  EXPECT_EQ(fi.sidecar, side);
  EXPECT_EQ(fi.shape, (Shape4D{6, 8, 16, 16}));
  EXPECT_EQ(fi.scan_shape_source, "ARINA sidecar 'arina.h5' STEM Metadata NumPixelsY x NumPixelsX");
  EXPECT_EQ(fi.calibration.at("energy_kev").get<double>(), 300.0);
  io::testing::forget_inspected_files();
  expect_child_equals_in_process(master, "", 0, 0, io::ScanShapeNeed::optional);
  io::testing::forget_inspected_files();
  expect_child_equals_in_process(master);
}

TEST_F(InspectChild, FloatSignedAndBigEndianFilesEqualInProcess) {
  const io::FileInfo f64 = expect_child_equals_in_process(contiguous_file("child_f64.h5", H5T_IEEE_F64LE));
  EXPECT_EQ(f64.dtype, DType::f32);
  EXPECT_EQ(f64.stored_as, DType::f64);
  EXPECT_EQ(f64.dims, (std::vector<std::size_t>{16, 6, 5}));
  const io::FileInfo f32 = expect_child_equals_in_process(contiguous_file("child_f32be.h5", H5T_IEEE_F32BE));
  EXPECT_EQ(f32.dtype, DType::f32);
  EXPECT_EQ(f32.byte_order, "big");
  const io::FileInfo i16 = expect_child_equals_in_process(contiguous_file("child_i16be.h5", H5T_STD_I16BE));
  EXPECT_EQ(i16.dtype, DType::i16);
  EXPECT_EQ(i16.byte_order, "big");
  EXPECT_FALSE(i16.stored_as.has_value());
  test::ChunkedSpec chunked;
  chunked.dims = {9, 4, 4};
  chunked.chunk = {3, 4, 4};
  chunked.type = H5T_STD_I32LE;
  const std::string path = test::temp_path("child_i32_chunked.h5");
  test::write_chunked(path, chunked);
  const io::FileInfo i32 = expect_child_equals_in_process(path);
  EXPECT_EQ(i32.dtype, DType::i32);
  EXPECT_FALSE(i32.one_frame_per_chunk);
}

TEST_F(InspectChild, EmdFileEqualsInProcess) {
  const std::string path = test::temp_path("child_sample.emd");
  sample::write_sample_emd(path, small_spec());
  const io::FileInfo fi = expect_child_equals_in_process(path);
  EXPECT_EQ(fi.shape, (Shape4D{6, 8, 16, 16}));
  EXPECT_NE(fi.source_kind.find("EMD"), std::string::npos) << fi.source_kind;
  // Contiguous: one run of plain frame records at the dataset's offset.
  EXPECT_EQ(fi.codec.kind, io::FrameCodecKind::plain);
  EXPECT_EQ(fi.records.files, (std::vector<std::string>{path}));
  ASSERT_EQ(fi.records.runs.size(), 1u);
  EXPECT_EQ(fi.records.runs[0].frames, 48u);
  EXPECT_EQ(fi.records.runs[0].bytes, 16u * 16u * 2u);
  EXPECT_EQ(fi.records.runs[0].stride, 16u * 16u * 2u);
}

TEST_F(InspectChild, UnfinishedAcquisitionIsNeverKept) {
  test::ChunkedSpec live;
  live.dims = {16, 8, 8};
  live.chunk = {1, 8, 8};
  live.written = [](std::uint64_t i) { return i < 10; };
  const std::string path = test::temp_path("child_live.h5");
  test::write_chunked(path, live);
  const io::FileInfo fi = expect_child_equals_in_process(path);
  EXPECT_FALSE(fi.ready);
  EXPECT_EQ(fi.chunks_written, 10u);
  EXPECT_EQ(fi.chunks_expected, 16u);
  const std::size_t n = children();
  EXPECT_EQ(io::inspect_hdf5(path).chunks_written, 10u);
  EXPECT_EQ(children(), n + 1);
}

TEST_F(InspectChild, SecondInspectStartsNoChildUntilTheFileIsTouched) {
  const std::string path = test::temp_path("child_cache.h5");
  sample::write_sample(path, small_spec());
  const std::size_t n = children();
  const io::FileInfo first = io::inspect(path);
  EXPECT_EQ(children(), n + 1);
  const io::FileInfo again = io::inspect(path);
  EXPECT_EQ(children(), n + 1);
  expect_same(again, first, false);
  // Nothing was parsed for the second inspect: a load's timing must not show the first parse again.
  EXPECT_GT(first.index_seconds, 0.0);
  EXPECT_EQ(again.index_seconds, 0.0);
  // The need does not matter for a scan shape that is known.
  expect_same(io::inspect_hdf5(path, "", 0, 0, io::ScanShapeNeed::optional), first, false);
  EXPECT_EQ(children(), n + 1);
  // Another request of the same file (scan shape given, another dataset path) is another parse.
  io::inspect(path, "", 8, 6);
  EXPECT_EQ(children(), n + 2);
  expect_error<IoError>([&] { io::inspect(path, "/nothing"); }, {"'/nothing'"});
  EXPECT_EQ(children(), n + 3);
  expect_error<IoError>([&] { io::inspect(path, "/nothing"); }, {"'/nothing'"});  // errors are never kept
  EXPECT_EQ(children(), n + 4);
  // Touched (mtime changed): parsed again, in a child.
  fs::last_write_time(path, fs::last_write_time(path) + std::chrono::seconds(5));
  expect_same(io::inspect(path), first, false);
  EXPECT_EQ(children(), n + 5);
  io::inspect(path);
  EXPECT_EQ(children(), n + 5);
}

TEST_F(InspectChild, IsolationOffParsesInProcessEveryTime) {
  const std::string path = test::temp_path("child_off.h5");
  sample::write_sample(path, small_spec());
  ::setenv("QGPU_PARSE_ISOLATION", "0", 1);
  const std::size_t n = children();
  const io::FileInfo a = io::inspect(path);
  const io::FileInfo b = io::inspect(path);
  EXPECT_EQ(children(), n);
  expect_same(a, io::inspect_in_process(path), false);
  EXPECT_EQ(b.shape, (Shape4D{6, 8, 16, 16}));
  ::unsetenv("QGPU_PARSE_ISOLATION");
  io::inspect(path);
  EXPECT_EQ(children(), n + 1);
}

TEST_F(InspectChild, TruncatedOrMalformedFileInfoIsAnError) {
  const std::string path = test::temp_path("child_codec.h5");
  sample::write_sample(path, small_spec());
  const io::FileInfo fi = io::inspect_in_process(path);
  const std::string bytes = io::encode_file_info(fi);
  ASSERT_GT(bytes.size(), 100u);
  for (std::size_t n = 0; n < bytes.size(); ++n) {
    try {
      (void)io::decode_file_info(std::string_view(bytes).substr(0, n), path);
      ADD_FAILURE() << "a report cut to " << n << " of " << bytes.size() << " bytes decoded";
      break;
    } catch (const Error& e) {
      if (std::string(e.what()).find("malformed FileInfo from the child process parsing '" + path + "'") ==
          std::string::npos) {
        ADD_FAILURE() << e.what();
        break;
      }
    }
  }
  expect_error<Error>([&] { (void)io::decode_file_info(bytes + "x", path); }, {"malformed FileInfo"});

  // The fields (8-byte length, CBOR) changed, the raw sections after them kept.
  std::uint64_t cbor = 0;
  std::memcpy(&cbor, bytes.data(), 8);
  ASSERT_LE(cbor, bytes.size() - 8);
  const nlohmann::json j = nlohmann::json::from_cbor(bytes.substr(8, cbor));
  const std::string sections = bytes.substr(8 + cbor);
  // 48 chunk locations written one after another (3 or 4 bytes each), no bad pixels.
  EXPECT_GE(sections.size(), 48u * 3u);
  EXPECT_LE(sections.size(), 48u * 4u);
  auto mutated = [&](const std::function<void(nlohmann::json&)>& change, const std::string& needle,
                     std::string raw = "\x01") {
    nlohmann::json m = j;
    change(m);
    if (raw == "\x01") raw = sections;
    std::string b(8, '\0');
    nlohmann::json::to_cbor(m, b);
    const std::uint64_t n = b.size() - 8;
    std::memcpy(b.data(), &n, 8);
    expect_error<Error>([&] { (void)io::decode_file_info(b + raw, path); },
                        {"malformed FileInfo from the child process parsing '" + path + "'", needle});
  };
  {
    std::string b = bytes;
    const std::uint64_t huge = ~std::uint64_t(0);
    std::memcpy(b.data(), &huge, 8);
    expect_error<Error>([&] { (void)io::decode_file_info(b, path); }, {"announces 18446744073709551615 bytes"});
  }
  mutated([](nlohmann::json& m) { m.erase("frames"); }, "FileInfo.frames is missing");
  mutated([](nlohmann::json& m) { m["frames"] = -3; }, "FileInfo.frames is not an unsigned integer");
  mutated([](nlohmann::json& m) { m["dtype"] = "u13"; }, "FileInfo.dtype names no dtype");
  mutated([](nlohmann::json& m) { m["shape"] = {1, 2, 3}; }, "FileInfo.shape has 3 extents");
  mutated([](nlohmann::json& m) { m["version"] = 7; }, "FileInfo.version is 7");
  mutated([](nlohmann::json& m) { m["part_tables"] = nlohmann::json::array(); }, "holds 0 tables for 1 parts");
  mutated([](nlohmann::json& m) { m["bad_pixels"] = 3; }, "bad pixels needs 12 bytes but 0 are left (short)");
  mutated([](nlohmann::json& m) { m["bad_pixels"] = ~std::uint64_t(0); }, "overflows 64 bits");
  mutated([](nlohmann::json& m) { m["part_tables"][0] = nullptr; }, "bytes follow the last section");
  // Hostile varints: beyond 64 bits, cut inside a location, a filter mask beyond 32 bits, bytes left in a table.
  auto one_table = [](std::size_t bytes) {
    return [bytes](nlohmann::json& m) { m["part_tables"][0]["block_bytes"] = {bytes}; };
  };
  const std::string big(11, '\xff');
  mutated(one_table(big.size() + 48 * 3), "hold a number beyond 64 bits", big + std::string(48 * 3, '\0'));
  mutated(one_table(144), "end inside a location in block 0 (short)", std::string(143, '\0') + "\x80");
  mutated(one_table(150), "hold a filter mask beyond 32 bits",
          std::string(2, '\0') + std::string("\x80\x80\x80\x80\x10", 5) + std::string(143, '\0'));
  mutated(one_table(145), "1 bytes follow the last of the 48 locations of block 0", std::string(145, '\0'));
  mutated(one_table(100), "gives block 0 of 48 locations 100 bytes (3 to 30 each)", std::string(100, '\0'));
  mutated(one_table(48 * 31), "gives block 0 of 48 locations 1488 bytes", std::string(48 * 31, '\0'));
  mutated([](nlohmann::json& m) { m["part_tables"][0]["block_bytes"] = {100, 44}; }, "holds 2 blocks for 48 chunks");
  mutated([](nlohmann::json& m) { m["records"]["runs"] = {{5, 0, 1, 0, 1, 1}}; }, "names file 5 of");
  mutated([](nlohmann::json& m) { m["part_tables"][0]["chunks"] = 47; },
          "holds 47 chunk locations but the chunk grid has 48");
  mutated([](nlohmann::json& m) { m["part_tables"][0]["chunk_dims"] = {0, 16, 16}; }, "holds a zero extent");
  mutated([](nlohmann::json& m) { m["part_tables"][0]["dims"] = {~std::uint64_t(0), ~std::uint64_t(0), 16}; },
          "overflow");
}

// Chunk locations the varints must carry exactly: the extremes, a chunk before the previous one's end, unwritten
// chunks, a filter mask of every bit.
TEST_F(InspectChild, ChunkLocationsRoundTripAtTheirExtremes) {
  io::FileInfo fi;
  fi.path = "/x.h5";
  fi.shape = {1, 6, 2, 2};
  fi.parts = {{"/x.h5", "/data", 0, 6}, {"/y.h5", "/d", 6, 0}};
  auto t = std::make_shared<io::ChunkTable>();
  t->file = "/x.h5";
  t->dataset_path = "/data";
  t->dims = {6, 2, 2};
  t->chunk_dims = {1, 2, 2};
  const std::uint64_t top = ~std::uint64_t(0);
  t->chunks = {{top, top, 0xffffffffu}, {0, 0, 0}, {1000, 24, 1}, {10, 5000, 0}, {top - 3, 7, 2}, {5, 0, 0}};
  fi.part_tables = {t, nullptr};
  fi.bad_pixels = {0, 3};
  fi.sparse.positions = {top, 0, 7};
  fi.index_seconds = 0.125;
  const io::FileInfo back = io::decode_file_info(io::encode_file_info(fi), fi.path);
  expect_same(back, fi, true);
  EXPECT_EQ(back.part_tables[0]->chunks[0].offset, top);
  EXPECT_EQ(back.part_tables[0]->chunks[4].offset, top - 3);
  EXPECT_EQ(back.sparse.positions, (std::vector<std::uint64_t>{top, 0, 7}));
}

// A table of several blocks (65536 locations each, coded and decoded on every core): every location back exactly,
// each block's first one included; a damaged block is named.
TEST_F(InspectChild, ChunkLocationsInSeveralBlocksRoundTrip) {
  const std::size_t n = 3 * 65536 + 5;
  io::FileInfo fi;
  fi.path = "/x.h5";
  fi.shape = {1, n, 2, 2};
  fi.parts = {{"/x.h5", "/data", 0, n}};
  auto t = std::make_shared<io::ChunkTable>();
  t->file = "/x.h5";
  t->dataset_path = "/data";
  t->dims = {n, 2, 2};
  t->chunk_dims = {1, 2, 2};
  t->chunks.resize(n);
  std::uint64_t at = 4096, x = 12345;
  for (std::size_t k = 0; k < n; ++k) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    const std::uint64_t size = k % 1000 == 7 ? 0 : 20 + (x >> 50);
    if (k % 777 == 3) at -= std::min<std::uint64_t>(at, x >> 40);  // a chunk before the previous one's end
    t->chunks[k] = {size ? at : 0, size, std::uint32_t(k % 5000 == 9 ? 0xffffffffu : 0)};
    at += size;
  }
  fi.part_tables = {t};
  const std::string bytes = io::encode_file_info(fi);
  const io::FileInfo back = io::decode_file_info(bytes, fi.path);
  ASSERT_EQ(back.part_tables[0]->chunks.size(), n);
  for (std::size_t k = 0; k < n; ++k) {
    const io::ChunkLocation& a = back.part_tables[0]->chunks[k];
    const io::ChunkLocation& b = t->chunks[k];
    ASSERT_TRUE(a.offset == b.offset && a.size == b.size && a.filter_mask == b.filter_mask) << "chunk " << k;
  }
  // The last location of block 2 cut short: its block is named.
  std::uint64_t cbor = 0;
  std::memcpy(&cbor, bytes.data(), 8);
  const nlohmann::json j = nlohmann::json::from_cbor(bytes.substr(8, cbor));
  const std::vector<std::uint64_t> blocks = j["part_tables"][0]["block_bytes"];
  ASSERT_EQ(blocks.size(), 4u);
  std::string damaged = bytes;
  const std::size_t last_of_2 = 8 + cbor + blocks[0] + blocks[1] + blocks[2] - 1;
  damaged[last_of_2] = char(0x80);
  expect_error<Error>([&] { (void)io::decode_file_info(damaged, fi.path); }, {"end inside a location in block 2 (short)"});
}

TEST_F(InspectChild, ShortOrMalformedChildReportIsAnError) {
  const std::string f = "/d/x.h5";
  auto header = [](std::uint64_t n) {
    std::string h(9, 'r');
    std::memcpy(h.data() + 1, &n, 8);
    return h;
  };
  // The report through the pipe.
  EXPECT_EQ(io::read_child_report(header(3), f), 3u);
  EXPECT_EQ(io::read_child_report(header(0), f), 0u);
  expect_error<Error>([&] { io::read_child_report("", f); }, {"malformed report", "'/d/x.h5'", "empty"});
  expect_error<Error>([&] { io::read_child_report(std::string("r\x03\x00", 3), f); },
                      {"a result report is 9 bytes, this one 3 (short)"});
  expect_error<Error>([&] { io::read_child_report(header(3) + "abc", f); }, {"this one 12"});
  expect_error<Error>([&] { io::read_child_report(header(std::uint64_t(1) << 40), f); },
                      {"more than a result holds"});
  expect_error<Error>([&] { io::read_child_report("zwhat", f); }, {"unknown report code 122"});
  expect_error<FormatError>([&] { io::read_child_report("Fbad rank", f); }, {"bad rank"});
  expect_error<IoError>([&] { io::read_child_report("Ino such file", f); }, {"no such file"});
  expect_error<DTypeError>([&] { io::read_child_report("Dcomplex", f); }, {"complex"});
  expect_error<Error>([&] { io::read_child_report("xstd::bad_alloc", f); },
                      {"parsing '/d/x.h5' failed in the child process: std::bad_alloc"});
  // The result in its memory file: exactly the bytes the report announces.
  const int fd = ::memfd_create("test-result", MFD_CLOEXEC);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::write(fd, "abcde", 5), 5);
  EXPECT_EQ(io::read_child_result(fd, 5, f).bytes(), "abcde");
  expect_error<Error>([&] { io::read_child_result(fd, 10, f); },
                      {"malformed result", "'/d/x.h5'", "announces 10 bytes but the result holds 5 (short)"});
  expect_error<Error>([&] { io::read_child_result(fd, 2, f); }, {"announces 2 bytes but the result holds 5"});
  ::close(fd);
  // A child whose parse throws something that is no qgpu error: an Error naming it, not a crash.
  expect_error<Error>([&] { io::parse_in_child(f, []() -> std::string { throw std::length_error("too long"); }); },
                      {"failed in the child process: too long"});
  EXPECT_EQ(io::parse_in_child(f, [] { return std::string(200000, 'q'); })->bytes(), std::string(200000, 'q'));
  EXPECT_EQ(io::parse_in_child(f, [] { return std::string(); })->bytes(), "");
}

TEST_F(InspectChild, KnownCrashesStayFormatErrors) {
  int files = 0;
  for (const auto& e : fs::directory_iterator(fs::path(QGPU_SOURCE_DIR) / "tests/fuzz/known_hdf5_crashes")) {
    if (e.path().extension() != ".h5") continue;
    ++files;
    const std::string f = e.path().string();
    for (int k = 0; k < 2; ++k)
      expect_error<FormatError>([&] { io::inspect(f); }, {"HDF5 library crashed parsing '" + f + "'", "SIGSEGV"});
  }
  EXPECT_EQ(files, 3);
}

// The use-after-free inside libhdf5's H5Aexists (tests/fuzz/known_hdf5_crashes/heap_dependent/README.md) crashes
// the child or not by heap state; either way this process gets a typed error, never parses the file itself, and
// survives 20 inspects.
TEST_F(InspectChild, HeapDependentUseAfterFreeNeverReachesThisProcess) {
  const std::string f = (fs::path(QGPU_SOURCE_DIR) /
                         "tests/fuzz/known_hdf5_crashes/heap_dependent/object_header_uaf_h5aexists.h5").string();
  ASSERT_TRUE(fs::exists(f));
  const std::size_t n = children();
  for (int k = 0; k < 20; ++k) {
    try {
      io::inspect(f);
      ADD_FAILURE() << "inspect " << k << " of the damaged file succeeded";
    } catch (const FormatError& e) {
      EXPECT_NE(std::string(e.what()).find(f), std::string::npos) << e.what();
    } catch (const IoError& e) {
      EXPECT_NE(std::string(e.what()).find(f), std::string::npos) << e.what();
    }
  }
  EXPECT_EQ(children(), n + 20);  // one child each: an error is never kept, nothing parsed here
}
