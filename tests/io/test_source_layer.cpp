// The source layer: readers chosen by content, the npy and raw readers against the frames the sample simulator
// makes (the same frames as the HDF5 sample), header parsing errors, and the GPU decode of plain records (every
// dtype, both byte orders, dense/encoded/binned, unaligned records) against the CPU load.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "io/hdf5/load.hpp"
#include "io/npy/npy.hpp"
#include "io/npy/npy_reader.hpp"
#include "io/source/readers.hpp"
#include "support/cuda_required.hpp"
#include "support/expect_error.hpp"
#include "support/temp_files.hpp"

using namespace qgpu;

namespace {

sample::SampleSpec small(DType t, std::size_t rows = 5, std::size_t cols = 4) {
  sample::SampleSpec s;
  s.scan_rows = rows;
  s.scan_cols = cols;
  s.det_rows = 24;
  s.det_cols = 20;
  s.dtype = t;
  s.seed = 11;
  return s;
}

std::vector<std::uint8_t> simulated(const sample::SampleSpec& s) {
  std::vector<std::uint8_t> v(s.scan_rows * s.scan_cols * s.det_rows * s.det_cols * dtype_size(s.dtype));
  sample::simulate_frames(s, 0, s.scan_rows * s.scan_cols, v.data());
  return v;
}

io::LoadOptions opts(const std::string& backend, const std::string& representation = "dense") {
  io::LoadOptions o;
  o.backend = backend;
  o.representation = representation;
  return o;
}

std::string write_bytes(const std::string& suffix, const std::string& bytes) {
  const std::string p = test::temp_path(suffix);
  std::ofstream(p, std::ios::binary) << bytes;
  return p;
}

}  // namespace

TEST(SourceLayer, ReadersAreChosenByContentNotName) {
  const auto s = small(DType::u16);
  const std::string h5_named_npy = test::temp_path("really_h5.npy");
  sample::write_sample(h5_named_npy, s);
  EXPECT_EQ(io::inspect(h5_named_npy).reader, "hdf5");
  const std::string npy_named_h5 = test::temp_path("really_npy.h5");
  sample::FramesLayout l;
  sample::write_sample_frames(npy_named_h5, s, l);
  const io::FileInfo fi = io::inspect(npy_named_h5, "", 5, 4);
  EXPECT_EQ(fi.reader, "npy");
  EXPECT_EQ(fi.shape, (Shape4D{5, 4, 24, 20}));
  EXPECT_EQ(fi.scan_shape_source, "given");
  std::vector<std::string> names;
  for (const auto& r : io::formats()) names.push_back(r.name);
  EXPECT_EQ(names[0], "hdf5");
  EXPECT_NE(std::find(names.begin(), names.end(), "npy"), names.end());
  EXPECT_NE(std::find(names.begin(), names.end(), "raw"), names.end());
  const std::string junk = write_bytes("junk.bin", std::string(300, 'x'));
  test::expect_error<IoError>([&] { io::inspect(junk); }, {"not an HDF5 file", "npy", "format 'raw'", junk});
  // Archives and compressed streams, by their magic bytes: named, with what to do.
  const std::string tail(300, 'x');
  const std::pair<std::string, std::string> archives[] = {
      {std::string("PK\x03\x04", 4) + tail, "a ZIP archive"},
      {std::string("\x1f\x8b\x08", 3) + tail, "gzip-compressed"},
      {std::string("\xfd" "7zXZ\0", 6) + tail, "xz-compressed"},
      {std::string("\x28\xb5\x2f\xfd", 4) + tail, "zstd-compressed"},
      {"BZh9" + tail, "bzip2-compressed"},
      {std::string("7z\xbc\xaf\x27\x1c", 6) + tail, "a 7-Zip archive"},
      {std::string(257, 'a') + "ustar" + tail, "a tar archive"}};
  for (const auto& [bytes, kind] : archives) {
    const std::string f = write_bytes("archive.bin", bytes);
    test::expect_error<IoError>([&] { io::inspect(f); }, {"not an HDF5 file", f, "it is " + kind, "extract"});
  }
  io::SourceOptions bad;
  bad.format = "tiff";
  test::expect_error<InvalidArgument>([&] { io::inspect(junk, bad); }, {"format 'tiff'", "hdf5", "npy", "raw"});
}

TEST(SourceLayer, NpyAndRawLoadTheSimulatedFramesExactlyOnCpu) {
  for (DType t : {DType::u8, DType::u16, DType::u32})
    for (bool big : {false, true})
      for (bool four_d : {false, true}) {
        auto s = small(t);
        s.four_d = four_d;
        const std::vector<std::uint8_t> ref = simulated(s);
        sample::FramesLayout npy;
        s.big_endian = big;
        npy.npy_version = four_d ? 2 : 1;
        const std::string p = test::temp_path(dtype_name(t) + (big ? "be" : "le") + (four_d ? "4d" : "3d") + ".npy");
        sample::write_sample_frames(p, s, npy);
        SCOPED_TRACE(p);
        io::LoadOptions o = opts("cpu");
        if (!four_d) o.scan_rows = 5, o.scan_cols = 4;
        const Dataset ds = io::load(p, o);
        EXPECT_EQ(ds.dtype(), t);
        EXPECT_EQ(ds.read().bytes, ref);
        EXPECT_EQ(ds.provenance().parameters.at("format"), "npy");
        EXPECT_EQ(ds.provenance().parameters.at("codec"), "plain");
        EXPECT_EQ(ds.provenance().parameters.at("byte_order"), big && t != DType::u8 ? "big" : "little");

        sample::FramesLayout raw;
        raw.npy = false;
        s.big_endian = big;
        raw.offset = 13;
        raw.frame_header = 5;
        raw.frame_footer = 3;
        const std::string r = test::temp_path(dtype_name(t) + (big ? "be" : "le") + ".raw");
        sample::write_sample_frames(r, s, raw);
        io::LoadOptions ro = opts("cpu", "encoded");
        ro.format = "raw";
        ro.raw = {dtype_name(t) + (big ? "be" : ""), 24, 20, 13, 5, 3};
        ro.scan_rows = 5;
        ro.scan_cols = 4;
        const Dataset rd = io::load(r, ro);
        EXPECT_EQ(rd.representation(), "encoded");
        EXPECT_EQ(rd.read().bytes, ref);
      }
}

TEST(SourceLayer, NpyHeaderDictSpellings) {
  auto parse = [](const std::string& dict, unsigned version = 1) {
    std::string h = {'\x93', 'N', 'U', 'M', 'P', 'Y', char(version), 0};
    const std::size_t len = dict.size();
    for (unsigned i = 0; i < (version == 1 ? 2u : 4u); ++i) h += char((len >> (8 * i)) & 0xff);
    h += dict;
    return io::npy::parse_header(reinterpret_cast<const std::uint8_t*>(h.data()), h.size(), "t");
  };
  const std::string dict_a = "{'descr': '>u4', 'fortran_order': False, 'shape': (3, 4, 5), }          \n";
  auto a = parse(dict_a);
  EXPECT_EQ(a.descr, ">u4");
  EXPECT_EQ(a.shape, (std::vector<std::uint64_t>{3, 4, 5}));
  EXPECT_EQ(a.data_offset, 10 + dict_a.size());
  auto b = parse("{\"shape\": (7L, 2L,3L,4L), \"descr\": \"<u2\", \"fortran_order\": False}\n", 2);
  EXPECT_EQ(b.shape, (std::vector<std::uint64_t>{7, 2, 3, 4}));
  EXPECT_EQ(b.major, 2u);
  test::expect_error<FormatError>([&] { parse("{'descr': '<u2', 'shape': (2,)}"); }, {"lacks 'fortran_order'"});
  test::expect_error<FormatError>([&] { parse("{'descr': '<u2', 'fortran_order': Maybe, 'shape': ()}"); },
                                  {"True or False"});
  test::expect_error<FormatError>([&] { parse("{'descr': '<u2', 'fortran_order': False, 'shape': (99999999999999999999,)}"); },
                                  {"shape"});
  test::expect_error<FormatError>([&] { parse("{'descr': '<u2', 'fortran_order': False, 'shape': (1, 2"); },
                                  {"expected"});
  const std::string h = io::npy_header("<u2", {2, 3}, false, 2);
  EXPECT_EQ(h.size() % 64, 0u);
  EXPECT_EQ(io::npy::parse_header(reinterpret_cast<const std::uint8_t*>(h.data()), h.size(), "t").shape,
            (std::vector<std::uint64_t>{2, 3}));
}

TEST(SourceLayer, TruncatedAndShortFilesNameTheProblem) {
  auto s = small(DType::u16);
  sample::FramesLayout l;
  l.npy = false;
  const std::string r = test::temp_path("short.raw");
  sample::write_sample_frames(r, s, l);
  std::filesystem::resize_file(r, std::filesystem::file_size(r) - 1);  // the last frame is cut
  io::LoadOptions o = opts("cpu");
  o.format = "raw";
  o.raw = {"uint16", 24, 20, 0, 0, 0};
  o.scan_rows = 5;
  o.scan_cols = 4;
  test::expect_error<FormatError>([&] { io::load(r, o); }, {"needs 20 frames", "19 whole frames", r});
  o.scan_rows = o.scan_cols = 0;  // 19 frames: not square, no scan shape
  test::expect_error<FormatError>([&] { io::load(r, o); }, {"19 frames", "scan_shape"});
  o.format = "npy";
  o.raw = {};
  test::expect_error<FormatError>([&] { io::load(r, o); }, {"not a .npy file"});
}

TEST(SourceLayerCuda, PlainRecordsDecodeOnTheGpuAsOnTheCpu) {
  QGPU_REQUIRE_CUDA();
  for (DType t : {DType::u8, DType::u16, DType::u32})
    for (bool big : {false, true}) {
      auto s = small(t, 8, 6);
      s.det_rows = s.det_cols = 32;  // groups of 32 pixels: the encoded load's live marks apply
      sample::FramesLayout raw;
      raw.npy = false;
      s.big_endian = big;
      raw.offset = 7;  // odd: records unaligned in the batch
      raw.frame_header = 3;
      const std::string r = test::temp_path(dtype_name(t) + (big ? "be" : "le") + ".raw");
      sample::write_sample_frames(r, s, raw);
      const std::vector<std::uint8_t> ref = simulated(s);
      for (const char* rep : {"dense", "encoded"})
        for (int variant = 0; variant < 3; ++variant) {
          SCOPED_TRACE(r + " " + rep + " variant " + std::to_string(variant));
          io::LoadOptions o = opts("cuda", rep);
          o.format = "raw";
          o.raw = {dtype_name(t) + (big ? "be" : "le"), 32, 32, 7, 3, 0};
          o.scan_rows = 8;
          o.scan_cols = 6;
          if (variant == 1) o.bin_scan = o.bin_detector = 2;
          if (variant == 2) o.scan_region = {1, 2, 4, 3}, o.detector_region = {5, 3, 16, 20};
          const Dataset g = io::load(r, o);
          o.backend = "cpu";
          const Dataset c = io::load(r, o);
          EXPECT_EQ(g.representation(), rep);
          EXPECT_EQ(g.read().bytes, c.read().bytes);
          if (variant == 0) EXPECT_EQ(g.read().bytes, ref);
        }
    }
}
